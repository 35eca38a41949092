//! The retry policy: exponential bounds capped at `cap`, and the delays drawn
//! from them. Randomness enters through one owned, seedable generator; the
//! formulas themselves live in `jitter`.

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::jitter::{self, Jitter};

/// The shape of the delays between attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Upper bound of the first retry's delay.
    pub base: Duration,
    /// No single delay exceeds it.
    pub cap: Duration,
    /// Growth per retry; finite and at least 1.
    pub factor: f64,
    /// How a delay is drawn from its bound.
    pub jitter: Jitter,
    /// `--delays`: explicit bounds instead of the formula, the last
    /// repeating; empty for the formula. `base` is then the first of them
    /// and `cap` the largest.
    pub bounds: Vec<Duration>,
}

impl Policy {
    /// The formula's policy, without explicit bounds.
    pub fn formula(base: Duration, cap: Duration, factor: f64, jitter: Jitter) -> Policy {
        Policy {
            base,
            cap,
            factor,
            jitter,
            bounds: Vec::new(),
        }
    }

    /// A policy of explicit bounds (`--delays`), at least one.
    pub fn explicit(bounds: Vec<Duration>, jitter: Jitter) -> Policy {
        let base = bounds.first().copied().unwrap_or_default();
        let cap = bounds.iter().copied().max().unwrap_or_default();
        Policy {
            base,
            cap,
            factor: 1.0,
            jitter,
            bounds,
        }
    }

    /// The bound of the retry with index `n` (0 for the first retry): the
    /// `n`th explicit bound (the last one past the end), else
    /// `min(cap, base * factor^n)`, saturating at `cap` instead of
    /// overflowing.
    pub fn upper(&self, n: u64) -> Duration {
        if let Some(last) = self.bounds.last() {
            return usize::try_from(n)
                .ok()
                .and_then(|i| self.bounds.get(i))
                .unwrap_or(last)
                .to_owned();
        }
        #[allow(clippy::cast_precision_loss)]
        let base = self.base.as_nanos() as f64;
        #[allow(clippy::cast_precision_loss)]
        let cap = self.cap.as_nanos() as f64;
        let exp = i32::try_from(n).unwrap_or(i32::MAX);
        let bound = base * self.factor.powi(exp);
        if !bound.is_finite() || bound >= cap {
            return self.cap;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let nanos = bound.round() as u128;
        jitter::nanos(nanos).min(self.cap)
    }

    /// The smallest and largest delay the retry with index `n` can have:
    /// `(lo, hi, hi_inclusive)`. Decorrelated jitter can land exactly on the
    /// cap (its clamp), the other jitters stay below their bound.
    pub fn range(&self, n: u64) -> (Duration, Duration, bool) {
        let upper = self.upper(n);
        match self.jitter {
            Jitter::None => (upper, upper, true),
            Jitter::Full => (Duration::ZERO, upper, upper.is_zero()),
            Jitter::Equal => (upper / 2, upper, upper.is_zero()),
            Jitter::Decorrelated => {
                // prev < base * 3^(n), so this delay < base * 3^(n+1), clamped.
                let grown = Policy::formula(self.base, self.cap, 3.0, self.jitter)
                    .upper(n.saturating_add(1));
                (self.base, grown, grown == self.cap)
            }
        }
    }

    /// A generator of this policy's delays, seeded for reproducibility.
    pub fn delays(&self, seed: u64) -> Delays {
        Delays {
            policy: self.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            prev: self.base,
        }
    }
}

/// A policy with its retry limit and seed, as `schedule` and a run use it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    /// The shape of the delays.
    pub policy: Policy,
    /// Retries after the first attempt; `None` for `--forever`.
    pub max_retries: Option<u64>,
    /// `--seed`, if given.
    pub seed: Option<u64>,
}

/// One delay and the bound it was drawn under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delay {
    /// How long to wait.
    pub delay: Duration,
    /// The largest value this draw could have produced.
    pub bound: Duration,
}

/// Draws the delays of one run, in order.
#[derive(Debug, Clone)]
pub struct Delays {
    policy: Policy,
    rng: Xoshiro256PlusPlus,
    prev: Duration,
}

impl Delays {
    /// The delay before the retry with index `n` (0 for the first retry).
    /// Calls must come in order of `n` for decorrelated jitter, whose state
    /// is the previous delay; `n` of 0 starts the curve over.
    pub fn next(&mut self, n: u64) -> Delay {
        let p = &self.policy;
        if n == 0 {
            self.prev = p.base;
        }
        let upper = p.upper(n);
        let u: f64 = self.rng.random();
        let delay = match p.jitter {
            Jitter::None => upper,
            Jitter::Full => jitter::full(upper, u),
            Jitter::Equal => jitter::equal(upper, u),
            Jitter::Decorrelated => {
                let bound = self.prev.saturating_mul(3).min(p.cap);
                let d = jitter::decorrelated(p.base, p.cap, self.prev, u);
                self.prev = d;
                return Delay { delay: d, bound };
            }
        };
        Delay {
            delay,
            bound: upper,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: Jitter) -> Policy {
        Policy::formula(
            Duration::from_millis(100),
            Duration::from_secs(30),
            2.0,
            jitter,
        )
    }

    #[test]
    fn explicit_bounds_are_taken_in_order_and_the_last_repeats() {
        let ms = Duration::from_millis;
        let p = Policy::explicit(vec![ms(1000), ms(5000), ms(300)], Jitter::None);
        let got: Vec<u128> = (0..5).map(|n| p.upper(n).as_millis()).collect();
        assert_eq!(got, [1000, 5000, 300, 300, 300]);
        assert_eq!(p.upper(u64::MAX), ms(300));
        assert_eq!((p.base, p.cap), (ms(1000), ms(5000)));
        // Jitter draws below each bound.
        let full = Policy::explicit(vec![ms(1000), ms(5000)], Jitter::Full);
        let mut d = full.delays(3);
        for n in 0..50 {
            let x = d.next(n);
            assert_eq!(x.bound, full.upper(n));
            assert!(x.delay < x.bound);
        }
    }

    #[test]
    fn upper_doubles_from_base_and_saturates_at_cap() {
        let p = policy(Jitter::None);
        let ms: Vec<u128> = (0..12).map(|n| p.upper(n).as_millis()).collect();
        assert_eq!(
            ms,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000
            ]
        );
        assert_eq!(p.upper(64), p.cap, "no wrap at 64 like some peers");
        assert_eq!(p.upper(u64::MAX), p.cap);
    }

    #[test]
    fn factor_one_is_constant() {
        let p = Policy {
            factor: 1.0,
            ..policy(Jitter::None)
        };
        assert_eq!(p.upper(0), p.base);
        assert_eq!(p.upper(0), p.upper(1000));
    }

    #[test]
    fn decorrelated_delays_feed_on_the_previous_one() {
        let p = policy(Jitter::Decorrelated);
        let mut d = p.delays(7);
        let mut prev = p.base;
        for n in 0..50 {
            let x = d.next(n).delay;
            assert!(x >= p.base && x <= p.cap);
            assert!(x < prev * 3 || x == p.cap);
            prev = x;
        }
    }

    #[test]
    fn same_seed_same_delays() {
        for j in [Jitter::Full, Jitter::Equal, Jitter::Decorrelated] {
            let p = policy(j);
            let a: Vec<_> = (0..20).scan(p.delays(42), |d, n| Some(d.next(n))).collect();
            let b: Vec<_> = (0..20).scan(p.delays(42), |d, n| Some(d.next(n))).collect();
            assert_eq!(a, b);
        }
    }

    proptest::proptest! {
        /// Over many policies and seeds, every drawn delay lies in the range
        /// its formula allows, and never above the cap.
        #[test]
        fn every_delay_lies_in_its_formulas_range(
            base_ms in 1u64..5_000,
            extra_ms in 0u64..120_000,
            factor in 1.0f64..10.0,
            jitter in proptest::sample::select(vec![
                Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated,
            ]),
            seed in proptest::num::u64::ANY,
        ) {
            let p = Policy::formula(
                Duration::from_millis(base_ms),
                Duration::from_millis(base_ms + extra_ms),
                factor,
                jitter,
            );
            let mut delays = p.delays(seed);
            let mut prev = p.base;
            for n in 0..40 {
                let d = delays.next(n);
                let (lo, hi, inclusive) = p.range(n);
                proptest::prop_assert!(d.delay <= p.cap);
                proptest::prop_assert!(d.delay >= lo, "{d:?} below {lo:?} at {n}");
                proptest::prop_assert!(d.delay < hi || (inclusive && d.delay == hi), "{d:?} above {hi:?} at {n}");
                proptest::prop_assert!(d.delay <= d.bound);
                match jitter {
                    Jitter::None => proptest::prop_assert_eq!(d.delay, p.upper(n)),
                    Jitter::Full => proptest::prop_assert!(d.delay < p.upper(n)),
                    Jitter::Equal => proptest::prop_assert!(d.delay >= p.upper(n) / 2 && d.delay < p.upper(n)),
                    Jitter::Decorrelated => proptest::prop_assert!(
                        d.delay == p.cap || (d.delay >= p.base && d.delay < prev * 3)
                    ),
                }
                prev = d.delay;
            }
        }
    }
}
