//! Durations as backoff accepts and shows them: the largest one accepted
//! anywhere, and the short form reports use (`5ns`, `312ms`, `1.20s`,
//! `2m 5s`).

use std::time::Duration;

/// The longest duration accepted anywhere: 1000 years. Far beyond any useful
/// delay or deadline, yet small enough that adding it to the clock cannot
/// overflow.
pub const MAX_DURATION: Duration = Duration::from_hours(1000 * 8766);

/// A duration the way people read it: `312ms`, `1.20s`, `41.2s`, `2m 5s`;
/// below a microsecond in nanoseconds, so that nothing shows as zero that
/// is not.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if d < Duration::from_micros(1) {
        format!("{}ns", d.as_nanos())
    } else if d < Duration::from_millis(1) {
        format!("{}us", d.as_micros())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d < Duration::from_secs(10) {
        format!("{secs:.2}s")
    } else if d < Duration::from_mins(1) {
        format!("{secs:.1}s")
    } else {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_specification() {
        assert_eq!(human(Duration::from_millis(312)), "312ms");
        assert_eq!(human(Duration::from_millis(1200)), "1.20s");
        assert_eq!(human(Duration::from_millis(41_200)), "41.2s");
        assert_eq!(human(Duration::from_secs(125)), "2m 5s");
        assert_eq!(human(Duration::from_micros(400)), "400us");
        assert_eq!(human(Duration::from_nanos(5)), "5ns");
        assert_eq!(human(Duration::ZERO), "0ns");
    }
}
