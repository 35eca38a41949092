//! `--alert-after N`: the count of a job's runs that failed in a row, which
//! the runs of a fleet share, and what a run's end does to it. A failed run
//! adds one; a success starts it again. A failed run is tolerated (no
//! alert) while the count, itself included, is below N. A count that
//! cannot be trusted (a record out of shape) is taken as N - 1 failures
//! before: the run that finds it alerts when it fails, for an alert that
//! fires once too often is safer than one that never fires.

use crate::fleet::Found;

/// The most failed runs in a row a record holds: a count stops there
/// rather than wrap, and a record above it is not one.
pub const MAX_FAILURES: u64 = 1_000_000_000;

/// The largest `--alert-after`.
pub const MAX_ALERT_AFTER: u64 = 1_000_000;

/// Runs of a job that failed in a row, as a store keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Failures(pub u64);

/// What a run's end did to the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// The count the store held before (`Corrupt`: a record out of shape,
    /// now replaced).
    pub before: Found<u64>,
    /// The count after: this run included when it failed, 0 after a
    /// success.
    pub after: u64,
}

/// The count after a run that `failed` (else succeeded), from what the
/// store held (`None`: a record out of shape), given `--alert-after`.
pub fn tally(held: Found<u64>, failed: bool, alert_after: u64) -> Tally {
    let after = match held {
        _ if !failed => 0,
        Found::Nothing => 1,
        Found::Held(n) => n.saturating_add(1).min(MAX_FAILURES),
        Found::Corrupt => alert_after.clamp(1, MAX_FAILURES),
    };
    Tally {
        before: held,
        after,
    }
}

/// Whether a failed run that brought the count to `failures` is tolerated
/// under `--alert-after`.
pub fn tolerated(failures: u64, alert_after: u64) -> bool {
    failures < alert_after
}

/// A count as a record writes it: digits alone, no sign, no leading
/// space, at most `MAX_FAILURES`; `None` for anything else.
pub fn parse_count(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text)
        .ok()?
        .parse::<u64>()
        .ok()
        .filter(|&n| n <= MAX_FAILURES)
}

/// The file store's record: one line of a fixed length, so that an update
/// is one write of the same size at offset 0.
pub fn record(failures: Failures) -> String {
    format!("backoff-streak v1 failures {:020}\n", failures.0)
}

/// The length of a record.
pub const RECORD_LEN: usize = 48;

/// The count a file record holds; `None` if the text is not exactly one.
pub fn parse_record(text: &[u8]) -> Option<Failures> {
    let digits = text
        .strip_prefix(b"backoff-streak v1 failures ")?
        .strip_suffix(b"\n")?;
    (digits.len() == 20)
        .then(|| parse_count(digits))
        .flatten()
        .map(Failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_adds_one_a_success_starts_again_and_a_bad_record_alerts() {
        assert_eq!(tally(Found::Nothing, true, 2).after, 1);
        assert!(tolerated(1, 2));
        assert_eq!(tally(Found::Held(1), true, 2).after, 2);
        assert!(!tolerated(2, 2));
        assert!(!tolerated(1, 1));
        assert_eq!(tally(Found::Held(7), false, 2).after, 0);
        assert_eq!(tally(Found::Corrupt, true, 3).after, 3);
        assert!(!tolerated(tally(Found::Corrupt, true, 3).after, 3));
        assert_eq!(tally(Found::Corrupt, false, 3).after, 0);
        assert_eq!(
            tally(Found::Held(MAX_FAILURES), true, 2).after,
            MAX_FAILURES
        );
    }

    #[test]
    fn a_record_is_fixed_in_length_and_anything_else_is_none() {
        let text = record(Failures(42));
        assert_eq!(text.len(), RECORD_LEN);
        assert_eq!(parse_record(text.as_bytes()), Some(Failures(42)));
        for bad in [
            "",
            "backoff-streak v1 failures 42\n",
            "backoff-streak v1 failures -0000000000000000042\n",
            "backoff-streak v1 failures 99999999999999999999\n",
            "backoff-streak v1 failures 00000000001000000001\n",
            "backoff-streak v1 failures 00000000000000000042",
        ] {
            assert_eq!(parse_record(bad.as_bytes()), None, "{bad:?}");
        }
        for bad in ["", "-1", " 5", "5 ", "0x10", "inf", "1e3", "1000000001"] {
            assert_eq!(parse_count(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse_count(b"0"), Some(0));
    }
}
