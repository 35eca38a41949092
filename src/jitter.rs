//! The four jitter formulas, as pure functions of the bound and of one uniform
//! sample `u` in `[0, 1)`, so that tests can assert exact values.

use std::time::Duration;

use clap::ValueEnum;

/// How a delay is drawn from its exponential bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Jitter {
    /// The delay is the bound itself.
    None,
    /// Uniform in [0, upper).
    Full,
    /// upper/2 plus uniform in [0, upper/2).
    Equal,
    /// min(cap, uniform in [base, 3 × previous delay)); ignores --factor.
    Decorrelated,
}

impl Jitter {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

/// A point in the half-open interval `[lo, hi)` chosen by `u` in `[0, 1)`.
/// Never returns `hi` (unless the interval is empty, then `lo`), whatever
/// rounding the floating-point product does.
pub fn uniform(lo: Duration, hi: Duration, u: f64) -> Duration {
    if hi <= lo {
        return lo;
    }
    let width = hi.saturating_sub(lo);
    let u = if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    };
    // Nanosecond precision is enough; the product may round up to `width`.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let offset = (width.as_nanos() as f64 * u) as u128;
    let offset = offset.min(width.as_nanos() - 1);
    lo + nanos(offset)
}

/// A duration from a nanosecond count, saturating instead of wrapping.
pub fn nanos(n: u128) -> Duration {
    let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
    #[allow(clippy::cast_possible_truncation)]
    let sub = (n % 1_000_000_000) as u32;
    Duration::new(secs, sub)
}

/// Full jitter: uniform in `[0, upper)`.
pub fn full(upper: Duration, u: f64) -> Duration {
    uniform(Duration::ZERO, upper, u)
}

/// Equal jitter: `upper/2 + uniform in [0, upper/2)`.
pub fn equal(upper: Duration, u: f64) -> Duration {
    let half = upper / 2;
    half + uniform(Duration::ZERO, half, u)
}

/// Decorrelated jitter: `min(cap, uniform in [base, 3 * prev))`.
pub fn decorrelated(base: Duration, cap: Duration, prev: Duration, u: f64) -> Duration {
    let hi = prev.saturating_mul(3);
    uniform(base, hi, u).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn full_spans_zero_to_upper_exclusive() {
        assert_eq!(full(100 * MS, 0.0), Duration::ZERO);
        assert_eq!(full(100 * MS, 0.5), 50 * MS);
        assert!(full(100 * MS, 0.999_999_999_999) < 100 * MS);
        assert_eq!(full(Duration::ZERO, 0.7), Duration::ZERO);
    }

    #[test]
    fn equal_spans_half_to_upper_exclusive() {
        assert_eq!(equal(100 * MS, 0.0), 50 * MS);
        assert_eq!(equal(100 * MS, 0.5), 75 * MS);
        assert!(equal(100 * MS, 0.999_999_999_999) < 100 * MS);
    }

    #[test]
    fn decorrelated_spans_base_to_three_prev_and_clamps_to_cap() {
        assert_eq!(decorrelated(10 * MS, 1000 * MS, 10 * MS, 0.0), 10 * MS);
        assert_eq!(decorrelated(10 * MS, 1000 * MS, 10 * MS, 0.5), 20 * MS);
        assert!(decorrelated(10 * MS, 1000 * MS, 10 * MS, 0.999_999) < 30 * MS);
        assert_eq!(
            decorrelated(10 * MS, 1000 * MS, 900 * MS, 0.9),
            1000 * MS,
            "a draw above the cap is clamped onto it"
        );
    }

    #[test]
    fn uniform_never_reaches_its_upper_end_even_for_huge_widths() {
        let hi = Duration::from_secs(u64::MAX / 4);
        assert!(uniform(Duration::ZERO, hi, 0.999_999_999_999_999_9) < hi);
        assert!(uniform(Duration::ZERO, hi, f64::NAN) < hi);
    }
}
