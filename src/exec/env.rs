//! The environment of an attempt or a hook: backoff's own, without its
//! secrets and the variables it sets, then the attempt's or the hook's
//! variables and those a receiver of the run's events carries.

use std::ffi::OsString;
use std::time::{Duration, Instant, SystemTime};

use crate::classify::Outcome;
use crate::exec::Carried;
use crate::run::{AttemptSpec, seconds};
use crate::sys::process::same_variable;

/// The variables backoff sets for the command; inherited ones of the same
/// names are never passed on, not even when backoff leaves one unset.
///
/// `BACKOFF_DEADLINE` and `BACKOFF_TIMEOUT` tell the command the limits of
/// this run (`--max-time`, `--timeout`) and nothing else: an inherited
/// `BACKOFF_DEADLINE` may be stale (exported by a run long over, to a shell
/// that started this one) and a command could not tell whose deadline it
/// is, so a backoff without `--max-time` sets none, even when an outer
/// backoff runs it. `BACKOFF_TIMEOUT` is also how backoff itself is given
/// `--timeout`: an inherited one is this run's `--timeout` (unless the flag
/// is given too), so the command is told the run's own, in seconds (`2.5`),
/// which a backoff the command starts in turn reads back as its own
/// `--timeout` (see `app`).
const ATTEMPT_VARIABLES: [&str; 7] = [
    "BACKOFF_RUN_ID",
    "BACKOFF_LOCK_TOKEN",
    "BACKOFF_ATTEMPT",
    "BACKOFF_MAX_ATTEMPTS",
    "BACKOFF_LAST_STATUS",
    "BACKOFF_DEADLINE",
    "BACKOFF_TIMEOUT",
];

/// When `deadline` is on the system clock, as a Unix time in seconds with
/// milliseconds (`1764600000.250`), `now` being `wall` on that clock.
fn unix_time(deadline: Instant, now: Instant, wall: SystemTime) -> Option<String> {
    let at = wall.checked_add(deadline.saturating_duration_since(now))?;
    let since = at.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some(format!("{}.{:03}", since.as_secs(), since.subsec_millis()))
}

/// backoff's own variables that may hold a secret (the store URL's
/// password, a check-in's or a Pushgateway's URL), never passed on to a command or a hook (a
/// backoff that one of them runs would take them for its own, and check
/// in or push for the outer run). The policy variables
/// (`BACKOFF_BASE`, ...) are passed on: they hold nothing secret, and a
/// backoff the command starts in turn follows them too.
const SECRET_VARIABLES: [&str; 3] = [
    "BACKOFF_BUDGET_STORE",
    "BACKOFF_PING",
    "BACKOFF_METRICS_PUSH",
];

/// Backoff's own environment, as the standard library reads it, without
/// its secrets and inherited variables named in `strip` or `carried`, then
/// `vars` (those with a value) and `carried`'s.
fn environment_with<'a>(
    strip: &[&str],
    vars: impl IntoIterator<Item = (&'a str, Option<String>)>,
    carried: &Carried,
) -> Vec<(OsString, OsString)> {
    let carried = carried.vars();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            !strip
                .iter()
                .chain(&SECRET_VARIABLES)
                .chain(carried.iter().map(|(n, _)| n))
                .any(|v| same_variable(name, v))
        })
        .collect();
    let carried = carried.iter().map(|(n, v)| (*n, v.clone()));
    for (name, value) in vars.into_iter().chain(carried) {
        if let Some(value) = value {
            env.push((OsString::from(name), OsString::from(value)));
        }
    }
    env
}

/// The environment of an attempt: backoff's own without inherited attempt
/// variables, then the attempt's. `timeout` is `--timeout`.
pub(super) fn environment(
    spec: &AttemptSpec<'_>,
    timeout: Option<Duration>,
    carried: &Carried,
) -> Vec<(OsString, OsString)> {
    let values = [
        Some(spec.run_id.to_owned()),
        spec.lock_token.map(|t| t.to_string()),
        Some(spec.number.to_string()),
        Some(spec.max_attempts.map(|m| m.to_string()).unwrap_or_default()),
        spec.last.map(Outcome::env_value),
        spec.deadline
            .and_then(|d| unix_time(d, Instant::now(), SystemTime::now())),
        timeout.map(seconds),
    ];
    environment_with(
        &ATTEMPT_VARIABLES,
        ATTEMPT_VARIABLES.into_iter().zip(values),
        carried,
    )
}

/// Every variable backoff sets for a command or a hook: another backoff
/// that one of them runs sees them, and must not take them for mistakes.
pub fn variables_set() -> impl Iterator<Item = &'static str> {
    ATTEMPT_VARIABLES.into_iter().chain(HOOK_VARIABLES)
}

/// The variables backoff sets for a hook; inherited ones of the same names
/// (and of the attempt's) are not passed on.
const HOOK_VARIABLES: [&str; 7] = [
    "BACKOFF_RUN_ID",
    "BACKOFF_LOCK_TOKEN",
    "BACKOFF_ATTEMPT",
    "BACKOFF_MAX_ATTEMPTS",
    "BACKOFF_LAST_STATUS",
    "BACKOFF_NEXT_DELAY",
    "BACKOFF_REASON",
];

/// The environment of a hook: backoff's own without inherited hook or
/// attempt variables, then `vars`.
pub(super) fn hook_environment(
    vars: &[(&'static str, String)],
    carried: &Carried,
) -> Vec<(OsString, OsString)> {
    let strip: Vec<&str> = ATTEMPT_VARIABLES
        .iter()
        .chain(&HOOK_VARIABLES)
        .copied()
        .collect();
    environment_with(
        &strip,
        vars.iter()
            .map(|(name, value)| (*name, Some(value.clone()))),
        carried,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::values::duration;

    #[test]
    fn seconds_have_the_decimals_they_need_and_read_back() {
        for (d, text) in [
            (Duration::from_secs(30), "30"),
            (Duration::from_millis(2500), "2.5"),
            (Duration::from_millis(250), "0.25"),
            (Duration::from_nanos(1), "0.000000001"),
            (Duration::from_nanos(90_000_000_120), "90.00000012"),
            (Duration::from_hours(8_766_000), "31557600000"),
        ] {
            assert_eq!(seconds(d), text);
            // As a backoff inside reads BACKOFF_TIMEOUT.
            assert_eq!(duration(&format!("{text}s")), Ok(d), "{text}");
        }
    }

    #[test]
    fn a_deadline_is_a_unix_time_with_milliseconds() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_599_990_125);
        let in_10s = now + Duration::from_millis(10_125);
        assert_eq!(
            unix_time(in_10s, now, wall).as_deref(),
            Some("1764600000.250")
        );
        assert_eq!(unix_time(now, now, wall).as_deref(), Some("1764599990.125"));
        // A deadline already passed is now.
        let later = now + Duration::from_secs(1);
        assert_eq!(
            unix_time(now, later, wall).as_deref(),
            Some("1764599990.125")
        );
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        assert_eq!(unix_time(now, now, whole).as_deref(), Some("5.000"));
    }
}
