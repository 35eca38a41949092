//! The rules of `--once-per`: which period a moment falls in, the record
//! of the last success that the stores keep, and whether the period is
//! done. Pure: the stores are in `budget`, the local time zone's offset
//! comes from the caller.
//!
//! A calendar period (`hour`, `day`, `week`, `month`) is one of the local
//! clock, in the zone of this host (`TZ`, else the system's, as cron
//! uses): its number is that of the local wall-clock time, so a day with a
//! change of daylight saving time is still one day (23 or 25 hours), and
//! the hour repeated when the clocks go back is one hour of the local
//! clock, two hours long, in which the job runs once (as cron runs the
//! jobs of that hour once). A DURATION is a sliding window: the job is done
//! while its last success is less than that old.
//!
//! A record is one line of at most `MAX_RECORD` bytes:
//!
//! ```text
//! backoff-once v1 at 1764864000000 done 1764864012345 offset 3600 period day:2025-12-04 run 6f1c… host web-3
//! ```
//!
//! `at` is when the run that succeeded decided to run (the period it ran
//! for is the one `at` falls in), `done` when it succeeded, both in Unix
//! milliseconds of the clock that decides (the store's, in Redis);
//! `offset` is the recording host's offset from UTC at `at`, in seconds;
//! `period` what it counted as, for people. A record read back may have
//! been written by anyone who could write the store: every field is
//! checked, and a record out of shape is no record.

use std::time::Duration;

use crate::fleet::lock::number;

/// The longest record read or written.
pub const MAX_RECORD: usize = 512;

/// The shortest DURATION of `--once-per`: a job run more often than once
/// a minute is no scheduled job, and a window that short is within the
/// clocks' and the lock's own margins.
pub const SHORTEST: Duration = Duration::from_mins(1);

/// The longest DURATION of `--once-per`: a year (365 days).
pub const LONGEST: Duration = Duration::from_hours(365 * 24);

/// How far ahead of the deciding clock a record may be and still be
/// believed: a clock that went back a day, and an hour more (the change of
/// daylight saving time, or a clock put right by an hour). A record
/// further ahead is not one a clock jump explains.
pub const AHEAD: Duration = Duration::from_hours(25);

/// The periods of `--once-per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// A local clock hour.
    Hour,
    /// A local calendar day.
    Day,
    /// An ISO week: Monday to Sunday.
    Week,
    /// A calendar month.
    Month,
    /// A sliding window of this length.
    Window(Duration),
}

impl Period {
    /// The period `hour`, `day`, `week` or `month`; `None` for another
    /// word (a DURATION is parsed by the caller).
    pub fn unit(word: &str) -> Option<Period> {
        Some(match word {
            "hour" => Period::Hour,
            "day" => Period::Day,
            "week" => Period::Week,
            "month" => Period::Month,
            _ => return None,
        })
    }

    /// How long the shortest of its periods lasts: an hour, a day of 23
    /// hours (the change to daylight saving time), a week or a month of
    /// 28 days less that hour, or the window.
    pub fn shortest(self) -> Duration {
        const HOUR: Duration = Duration::from_hours(1);
        match self {
            Period::Hour => HOUR,
            Period::Day => HOUR * 23,
            Period::Week => HOUR * (7 * 24 - 1),
            Period::Month => HOUR * (28 * 24 - 1),
            Period::Window(d) => d,
        }
    }

    /// Its name, as given: `day`, `2h`.
    pub fn name(self) -> String {
        match self {
            Period::Hour => "hour".into(),
            Period::Day => "day".into(),
            Period::Week => "week".into(),
            Period::Month => "month".into(),
            Period::Window(d) => crate::duration::human(d),
        }
    }

    /// The number of the calendar period that the moment `ms` (Unix
    /// milliseconds) falls in, where the local time is `offset` seconds
    /// east of UTC; `None` for a window.
    pub fn number(self, ms: u64, offset: i64) -> Option<i64> {
        let local = i64::try_from(ms / 1000).ok()?.checked_add(offset)?;
        let day = local.div_euclid(86_400);
        Some(match self {
            Period::Hour => local.div_euclid(3600),
            Period::Day => day,
            // 1970-01-01 was a Thursday: day -3 was a Monday.
            Period::Week => (day + 3).div_euclid(7),
            Period::Month => {
                let (year, month, _) = civil_from_days(i128::from(day));
                i64::try_from(year * 12 + month - 1).ok()?
            }
            Period::Window(_) => return None,
        })
    }

    /// The period that `ms` falls in, for people and for the record, with
    /// the local time `offset` seconds east of UTC: `day:2026-12-06`,
    /// `hour:2026-12-06T13`, `week:2026-W49`, `month:2026-12`, or
    /// `window:1h` for a window.
    pub fn label(self, ms: u64, offset: i64) -> String {
        let local = i128::from(ms / 1000) + i128::from(offset);
        let day = local.div_euclid(86_400);
        let (year, month, date) = civil_from_days(day);
        match self {
            Period::Hour => format!(
                "hour:{year:04}-{month:02}-{date:02}T{:02}",
                local.rem_euclid(86_400) / 3600
            ),
            Period::Day => format!("day:{year:04}-{month:02}-{date:02}"),
            Period::Week => {
                // The ISO week's year is its Thursday's.
                let thursday = day - (day + 3).rem_euclid(7) + 3;
                let (year, _, _) = civil_from_days(thursday);
                let first = days_from_civil(year, 1, 1);
                format!("week:{year:04}-W{:02}", (thursday - first) / 7 + 1)
            }
            Period::Month => format!("month:{year:04}-{month:02}"),
            Period::Window(d) => format!("window:{}", crate::duration::human(d)),
        }
    }
}

/// A date (year, month 1–12, day 1–31) of the proleptic Gregorian
/// calendar, from days since 1970-01-01 (H. Hinnant's `civil_from_days`;
/// in `i128`, nothing overflows).
pub fn civil_from_days(days: i128) -> (i128, i128, i128) {
    // Days since 0000-03-01, in eras of 400 years (146,097 days).
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i128::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of a date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let y = if month <= 2 { year - 1 } else { year };
    let (era, yoe) = (y.div_euclid(400), y.rem_euclid(400));
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The last success of a job, as its record tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Success {
    /// When the run decided to run, in Unix milliseconds of the deciding
    /// clock: the period it ran for is the one this falls in.
    pub at_ms: u64,
    /// When it succeeded, on the same clock.
    pub done_ms: u64,
    /// The recording host's offset from UTC at `at_ms`, in seconds.
    pub offset: i64,
    /// The period it counted as (`Period::label`).
    pub period: String,
    /// Its run id (`BACKOFF_RUN_ID`).
    pub run_id: String,
    /// Its host name.
    pub host: String,
}

impl Success {
    /// This record's line, newline included.
    pub fn record(&self) -> String {
        format!("{} done {} {}\n", self.head(), self.done_ms, self.tail())
    }

    /// The part of the record before `done` (a store that writes `done`
    /// on its own clock puts it between this and `tail`).
    pub fn head(&self) -> String {
        format!("backoff-once v1 at {}", self.at_ms)
    }

    /// The part of the record after `done`.
    pub fn tail(&self) -> String {
        format!(
            "offset {} period {} run {} host {}",
            self.offset,
            clean(&self.period, 64),
            clean(&self.run_id, 64),
            clean(&self.host, 253)
        )
    }

    /// The success a record names; `None` when `text` is not a record.
    pub fn parse(text: &[u8]) -> Option<Success> {
        let words = crate::fleet::lock::words(text, MAX_RECORD)?;
        let [
            "backoff-once",
            "v1",
            "at",
            at,
            "done",
            done,
            "offset",
            offset,
            "period",
            period,
            "run",
            run_id,
            "host",
            host,
        ] = words[..]
        else {
            return None;
        };
        let offset = match offset.strip_prefix('-') {
            Some(digits) => -i64::try_from(number(digits)?).ok()?,
            None => i64::try_from(number(offset)?).ok()?,
        };
        // No zone is a day or more from UTC.
        if offset.abs() >= 86_400 {
            return None;
        }
        for (word, max) in [(period, 64), (run_id, 64), (host, 253)] {
            if word.is_empty() || clean(word, max) != word {
                return None;
            }
        }
        let (at_ms, done_ms) = (number(at)?, number(done)?);
        if done_ms < at_ms {
            return None;
        }
        Some(Success {
            at_ms,
            done_ms,
            offset,
            period: period.to_owned(),
            run_id: run_id.to_owned(),
            host: host.to_owned(),
        })
    }
}

/// Whether the period is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No success recorded for it: the job runs.
    Due,
    /// A success recorded for it: the job does not run.
    Done,
    /// A success recorded at a time ahead of the deciding clock, by this
    /// much (the clock went back since): counted as done, so that a clock
    /// put back never gives a second success.
    Ahead(Duration),
    /// A success recorded further ahead than `AHEAD`, which no clock jump
    /// explains: not believed, and the job runs.
    Future(Duration),
}

impl Verdict {
    /// Whether the job runs.
    pub fn runs(self) -> bool {
        matches!(self, Verdict::Due | Verdict::Future(_))
    }
}

/// Whether `period` is done at `now_ms` (Unix milliseconds of the deciding
/// clock), given the last success recorded, if any, and the local zone's
/// offset from UTC at a moment (`offset`; `None`: UTC). A calendar period
/// is decided in this host's zone: the success's moment and now, each at
/// its own offset (a day that changes its offset is still one day).
pub fn decide(
    period: Period,
    last: Option<&Success>,
    now_ms: u64,
    offset: impl Fn(u64) -> Option<i64>,
) -> Verdict {
    let Some(last) = last else {
        return Verdict::Due;
    };
    let latest = last.done_ms.max(last.at_ms);
    if latest > now_ms {
        let ahead = Duration::from_millis(latest - now_ms);
        if ahead > AHEAD {
            return Verdict::Future(ahead);
        }
        // Ahead by less than a second: the same moment, as far as clocks
        // tell.
        if ahead >= Duration::from_secs(1) {
            return Verdict::Ahead(ahead);
        }
    }
    let done = match period {
        Period::Window(d) => {
            now_ms.saturating_sub(last.done_ms) < u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
        }
        calendar => {
            let of = |ms: u64| calendar.number(ms, offset(ms).unwrap_or(0));
            match (of(last.at_ms), of(now_ms)) {
                (Some(then), Some(now)) => then >= now,
                _ => false,
            }
        }
    };
    if done { Verdict::Done } else { Verdict::Due }
}

/// `s` with only the characters of host names, UUIDs and period labels
/// (letters, digits, `.`, `-`, `_`, `:`), any other replaced by `?`, at
/// most `max` of them; `?` for nothing at all.
fn clean(s: &str, max: usize) -> String {
    crate::fleet::lock::kept(s, max, &[':'])
}

/// What a store holds as the record of the last success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No record: the job never succeeded (or its record was reset).
    Nothing,
    /// A record.
    Record(Success),
    /// Something that is no record, and why it is not believed.
    Hostile(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-06T13:20:00Z.
    const NOW: u64 = 1_796_515_200_000 + 13 * 3_600_000 + 20 * 60_000;

    fn success(at_ms: u64) -> Success {
        Success {
            at_ms,
            done_ms: at_ms + 5000,
            offset: 3600,
            period: "day:2026-12-06".into(),
            run_id: "6f1c2b9e-0d3a-4c1e-9b7a-1f2e3d4c5b6a".into(),
            host: "web-3.example".into(),
        }
    }

    #[test]
    fn labels_name_the_local_period() {
        assert_eq!(Period::Day.label(NOW, 0), "day:2026-12-06");
        assert_eq!(Period::Hour.label(NOW, 0), "hour:2026-12-06T13");
        assert_eq!(Period::Hour.label(NOW, 11 * 3600), "hour:2026-12-07T00");
        assert_eq!(Period::Month.label(NOW, 0), "month:2026-12");
        // 2026-12-06 is a Sunday of ISO week 49; the Monday after starts
        // week 50.
        assert_eq!(Period::Week.label(NOW, 0), "week:2026-W49");
        assert_eq!(Period::Week.label(NOW, 11 * 3600), "week:2026-W50");
        // 2027-01-01 is a Friday: in week 53 of 2026.
        let new_year = 1_798_761_600_000;
        assert_eq!(Period::Week.label(new_year, 0), "week:2026-W53");
        assert_eq!(Period::Day.label(new_year, 0), "day:2027-01-01");
        assert_eq!(
            Period::Window(Duration::from_hours(2)).label(NOW, 0),
            "window:2h"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2027, 1, 1), 20_819);
    }

    #[test]
    fn a_record_reads_back_as_it_was_written_and_nothing_else_is_one() {
        let s = success(NOW);
        assert_eq!(Success::parse(s.record().as_bytes()), Some(s.clone()));
        let west = Success {
            offset: -18_000,
            ..s.clone()
        };
        assert_eq!(Success::parse(west.record().as_bytes()), Some(west));
        let good = s.record();
        for bad in [
            String::new(),
            good.replace("v1", "v2"),
            good.replace("offset 3600", "offset 86400"),
            good.replace("offset 3600", "offset +3600"),
            good.replace(" host ", " host  "),
            good.replace(&format!("done {}", NOW + 5000), "done 1"),
            format!("{good}{}", "x".repeat(MAX_RECORD)),
            good.replace("web-3", "web\u{1b}3"),
            good.replace('\n', " extra\n"),
        ] {
            assert_eq!(Success::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(Success::parse(&[0xff; 40]), None);
        let hostile = Success {
            host: "evil host\n".into(),
            ..s
        };
        assert!(hostile.record().ends_with(" host evil?host?\n"));
    }

    #[test]
    fn a_calendar_period_is_done_once_a_success_is_recorded_in_it() {
        let utc = |_| Some(0);
        assert_eq!(decide(Period::Day, None, NOW, utc), Verdict::Due);
        let s = success(NOW - 3_600_000);
        assert_eq!(decide(Period::Day, Some(&s), NOW, utc), Verdict::Done);
        assert_eq!(decide(Period::Hour, Some(&s), NOW, utc), Verdict::Due);
        assert_eq!(decide(Period::Month, Some(&s), NOW, utc), Verdict::Done);
        let yesterday = success(NOW - 14 * 3_600_000);
        assert_eq!(
            decide(Period::Day, Some(&yesterday), NOW, utc),
            Verdict::Due
        );
        assert_eq!(
            decide(Period::Week, Some(&yesterday), NOW, utc),
            Verdict::Done
        );
        // In a zone eleven hours ahead, 13:20 UTC is the next day there.
        let east = |_| Some(11 * 3600);
        let morning = success(NOW - 3_600_000 * 2);
        assert_eq!(decide(Period::Day, Some(&morning), NOW, east), Verdict::Due);
    }

    #[test]
    fn a_day_with_a_change_of_time_is_one_day_and_the_repeated_hour_one_hour() {
        // 2026-11-01 in New York: EDT (-4h) until 06:00Z, EST (-5h) after.
        let change = 1_793_512_800_000;
        let ny = move |ms: u64| Some(if ms < change { -4 * 3600 } else { -5 * 3600 });
        // 01:30 EDT, then 01:30 EST an hour later: one local hour.
        let first = change - 1_800_000;
        let second = change + 1_800_000;
        assert_eq!(Period::Hour.label(first, -4 * 3600), "hour:2026-11-01T01");
        assert_eq!(Period::Hour.label(second, -5 * 3600), "hour:2026-11-01T01");
        let s = success(first);
        let s = Success {
            done_ms: first,
            ..s
        };
        assert_eq!(decide(Period::Hour, Some(&s), second, ny), Verdict::Done);
        // 02:00 EST is the next hour.
        assert_eq!(
            decide(Period::Hour, Some(&s), second + 1_800_000, ny),
            Verdict::Due
        );
        // 00:30 EDT to 23:30 EST is one day of 25 hours.
        let midnight_edt = change - 5_400_000;
        let s = Success {
            done_ms: midnight_edt,
            ..success(midnight_edt)
        };
        let late = change + 22 * 3_600_000 + 1_800_000;
        assert_eq!(Period::Day.label(late, -5 * 3600), "day:2026-11-01");
        assert_eq!(decide(Period::Day, Some(&s), late, ny), Verdict::Done);
    }

    #[test]
    fn a_window_slides_from_the_last_success() {
        let utc = |_| Some(0);
        let hour = Period::Window(Duration::from_hours(1));
        let s = success(NOW - 3_000_000);
        // done 5 s after at: 50 min - 5 s ago.
        assert_eq!(decide(hour, Some(&s), NOW, utc), Verdict::Done);
        assert_eq!(decide(hour, Some(&s), NOW + 605_000, utc), Verdict::Due);
    }

    #[test]
    fn clocks_put_back_count_as_done_and_records_from_far_ahead_are_not_believed() {
        let utc = |_| Some(0);
        let s = success(NOW);
        // The clock went back an hour, then a day.
        assert_eq!(
            decide(Period::Hour, Some(&s), NOW - 3_600_000, utc),
            Verdict::Ahead(Duration::from_secs(3605))
        );
        assert!(!decide(Period::Day, Some(&s), NOW - 86_400_000, utc).runs());
        // Forward: a new period.
        assert_eq!(
            decide(Period::Day, Some(&s), NOW + 86_400_000, utc),
            Verdict::Due
        );
        let far = success(NOW + 400 * 86_400_000);
        assert!(matches!(
            decide(Period::Day, Some(&far), NOW, utc),
            Verdict::Future(_)
        ));
        assert!(decide(Period::Day, Some(&far), NOW, utc).runs());
        // Within a second: the same moment.
        let s = Success {
            done_ms: NOW + 500,
            ..success(NOW)
        };
        assert_eq!(decide(Period::Day, Some(&s), NOW, utc), Verdict::Done);
    }
}
