//! The token bucket of a retry budget (adaptive retries, gRPC retry
//! throttling), as pure arithmetic: each retry takes a token, each success
//! deposits `ratio` of one, and the bucket holds at most `burst`. Tokens are
//! counted in millionths, so that no rounding loses or creates a token
//! however many processes update a store. Also the checks of the values a
//! budget is given: token amounts and keys.

/// Millionths of a token in one token.
pub const UNIT: u64 = 1_000_000;

/// The largest burst accepted, in tokens.
pub const MAX_BURST: u64 = 1_000_000;

/// The arithmetic of a bucket, in millionths of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Most tokens the bucket holds (and starts with).
    pub burst: u64,
    /// Tokens a success deposits.
    pub ratio: u64,
}

impl Bucket {
    /// Takes one token if there is one: the new level, or `None`.
    pub fn take(self, level: u64) -> Option<u64> {
        level.min(self.burst).checked_sub(UNIT)
    }

    /// Deposits `ratio`, up to `burst`.
    pub fn deposit(self, level: u64) -> u64 {
        level
            .min(self.burst)
            .saturating_add(self.ratio)
            .min(self.burst)
    }
}

/// A bucket's state as a store holds it: its level, in millionths of a
/// token, and the burst and ratio of the run that last changed it (`None`
/// in a state written by a version of backoff that did not record them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Tokens left, in millionths.
    pub micros: u64,
    /// The bucket the state was made with.
    pub made: Option<Bucket>,
}

/// Shows a level of millionths as tokens: `9.5`, `10`, `0.000001`.
pub fn show_tokens(micros: u64) -> String {
    let whole = micros / UNIT;
    let frac = micros % UNIT;
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{frac:06}")
            .trim_end_matches('0')
            .to_owned()
    }
}

/// Parses a token amount with at most six decimals into millionths.
pub fn parse_tokens(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) {
        return Err("must be a number like 10 or 0.1".into());
    }
    if frac.len() > 6 {
        return Err("at most six decimals".into());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "too large".to_owned())?
    };
    let frac: u64 = format!("{frac:0<6}").parse().unwrap_or(0);
    whole
        .checked_mul(UNIT)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(|| "too large".to_owned())
}

/// Checks a budget key: 1 to 128 of `A-Z a-z 0-9 . _ -`, not starting with
/// a dot, so that it names one file in the budget directory and no other.
pub fn check_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err("a key is 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bucket = Bucket {
        burst: 10 * UNIT,
        ratio: UNIT / 10,
    };

    #[test]
    fn a_retry_takes_a_whole_token_and_a_success_deposits_the_ratio() {
        assert_eq!(B.take(10 * UNIT), Some(9 * UNIT));
        assert_eq!(B.take(UNIT), Some(0));
        assert_eq!(B.take(UNIT - 1), None, "less than one token: no retry");
        assert_eq!(B.deposit(0), UNIT / 10);
        assert_eq!(B.deposit(10 * UNIT), 10 * UNIT, "never above the burst");
        let mut level = 0;
        for _ in 0..30 {
            level = B.deposit(level);
        }
        assert_eq!(
            level,
            3 * UNIT,
            "thirty deposits of 0.1 are exactly 3 tokens"
        );
    }

    #[test]
    fn token_amounts_parse_exactly() {
        assert_eq!(parse_tokens("10"), Ok(10 * UNIT));
        assert_eq!(parse_tokens("0.1"), Ok(UNIT / 10));
        assert_eq!(parse_tokens(".5"), Ok(UNIT / 2));
        assert_eq!(parse_tokens("0.000001"), Ok(1));
        for bad in [
            "",
            ".",
            "-1",
            "1e3",
            "0.0000001",
            "x",
            "99999999999999999999",
        ] {
            assert!(parse_tokens(bad).is_err(), "{bad:?}");
        }
        assert_eq!(show_tokens(9 * UNIT + UNIT / 2), "9.5");
        assert_eq!(show_tokens(10 * UNIT), "10");
        assert_eq!(show_tokens(1), "0.000001");
    }

    #[test]
    fn keys_name_one_file_and_no_other() {
        assert!(check_key("nightly-sync_1.a").is_ok());
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(129), "ключ"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }
}
