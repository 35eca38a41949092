//! `--once-per`'s record of a job's last success, wherever it lives: in a
//! file of the state directory on one host (`file::once`), or in Redis for
//! a fleet (`redis::once`, decided by the server's clock). Read and written
//! only by a run that holds the job's lock, so that no two runs decide on
//! it at once. The rules are in `fleet::once`.
//!
//! A record that cannot be believed (not one, a key of another type, a
//! file that is a link or a FIFO, a time far ahead) is said once and
//! counts as no record: the job runs. A catch-up record that kept the job
//! from running on a wrong word would miss a run, which nobody notices
//! until the job's work is missing; a duplicate run is what the job's
//! schedule risks anyway (a host's cron fires twice after a clock change).
//! A store that cannot be reached is the lock's business: it fails as
//! `--lock-fail` says.

use std::time::{Duration, UNIX_EPOCH};

use crate::duration::human;
use crate::event::OnceNews;
use crate::fleet::once::{Period, Success, Verdict, decide};
use crate::run::Wait;
use crate::store::file::StateDir;
use crate::store::file::now_ms as host_ms;
use crate::store::{FailMode, Kind, Settings, Shared, StoreError, Unwatched};
pub use crate::store::{OnceBackend, Stored};

/// Once-per records (`--once-per`).
#[derive(Debug)]
pub enum Onces {}

/// How a once-per record is used: its period, and what a store that
/// cannot be used becomes (`--lock-fail`, as for the lock it goes with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnceLimits {
    /// `--once-per`.
    pub period: Period,
    /// `--lock-fail`.
    pub fail: FailMode,
}

impl Kind for Onces {
    type Backend = dyn OnceBackend;
    type Limits = OnceLimits;
    const NOUN: &'static str = "once-per record";
    const FLAG: &'static str = "--once-per";
    fn fail(limits: &OnceLimits, _: FailMode) -> FailMode {
        limits.fail
    }
    fn in_file(
        dir: StateDir,
        key: &str,
        limits: OnceLimits,
        s: Settings,
    ) -> Result<Box<dyn OnceBackend>, String> {
        let f = crate::store::file::once::FileOnce::open(dir, key, limits.period, s.timeout)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        limits: OnceLimits,
        s: Settings,
    ) -> Result<Box<dyn OnceBackend>, String> {
        let r = crate::store::redis::once::RedisOnce::new(url, key, limits.period, s.timeout)?;
        Ok(Box::new(r))
    }
}

/// A once-per record, wherever it lives.
pub type OnceStore = Shared<Onces>;

/// The local zone's offset from UTC at `ms`, in seconds.
pub fn offset_at(ms: u64) -> Option<i64> {
    crate::sys::localtime::utc_offset(UNIX_EPOCH + Duration::from_millis(ms))
}

/// An offset from UTC for people: `UTC+01:00`.
fn zone(offset: i64) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let a = offset.unsigned_abs();
    format!("UTC{sign}{:02}:{:02}", a / 3600, a / 60 % 60)
}

/// How far apart this host's clock and the store's may be before it is
/// said: more than a call's round trip, less than anything that moves a
/// period's edge by much.
const SKEW: Duration = Duration::from_secs(2);

impl OnceStore {
    /// The period it decides on.
    pub fn period(&self) -> Period {
        self.backend().period()
    }

    /// The record and the time (see `OnceBackend::read`).
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn show(&self) -> Result<(Stored, u64), StoreError> {
        self.backend().read(&mut Unwatched)
    }

    /// Removes the record (see `OnceBackend::reset`).
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(Stored, u64), StoreError> {
        self.backend().reset(&mut Unwatched)
    }

    /// Says what cannot be believed, or disagrees, once: on a line no
    /// output mode hides, since it changes whether the job runs.
    fn say(&self, what: &str) {
        self.warnings
            .alert(&format!("{} '{}': {what}", Onces::NOUN, self.key()));
    }

    /// Says how the clocks and zones that decide disagree, if they do.
    fn compare_clocks(&self, last: Option<&Success>, now_ms: u64) {
        if let Some(server) = self.server().filter(|_| self.backend().clocked()) {
            let host = host_ms();
            let apart = Duration::from_millis(host.abs_diff(now_ms));
            if apart > SKEW {
                let way = if host > now_ms { "ahead of" } else { "behind" };
                self.say(&format!(
                    "this host's clock is {} {way} the store's ({server}): periods are decided by the store's clock",
                    human(apart)
                ));
            }
        }
        if let Some(last) = last
            && let Some(here) = offset_at(last.at_ms)
            && here != last.offset
        {
            self.say(&format!(
                "its last success was recorded by {} in {}, where this host's zone (TZ) is {} at that time: periods are decided in this host's zone",
                last.host,
                zone(last.offset),
                zone(here)
            ));
        }
    }
}

impl crate::run::OncePer for OnceStore {
    fn key(&self) -> &str {
        Shared::key(self)
    }

    fn decide(&self, wait: &mut dyn Wait) -> Result<OnceNews, i32> {
        let period = self.period();
        let (stored, now_ms) = match self.backend().read(wait) {
            Ok(read) => read,
            Err(StoreError::Interrupted(sig)) => return Err(sig),
            Err(StoreError::Failed(why)) => {
                let run = self.fall_back(
                    &why,
                    "running the command: it may run twice in the period (--lock-fail open)",
                    "not running the command: a run that cannot tell whether the period is done does not run (--lock-fail open would run it)",
                );
                return Ok(OnceNews::Unavailable { run, why });
            }
        };
        let last = match stored {
            Stored::Record(s) => Some(s),
            Stored::Nothing => None,
            Stored::Hostile(why) => {
                self.say(&format!(
                    "{why}: not believed, and the job runs (a missed run is worse than a duplicate); its next success replaces it"
                ));
                None
            }
        };
        self.compare_clocks(last.as_ref(), now_ms);
        let verdict = decide(period, last.as_ref(), now_ms, offset_at);
        match verdict {
            Verdict::Ahead(by) => self.say(&format!(
                "its last success is recorded {} ahead of the deciding clock, which went back since: the period counts as done",
                human(by)
            )),
            Verdict::Future(by) => self.say(&format!(
                "its last success is recorded {} ahead of the deciding clock, more than a clock put back explains: not believed, and the job runs",
                human(by)
            )),
            Verdict::Due | Verdict::Done => {}
        }
        Ok(OnceNews::Decided {
            period: period.label(now_ms, offset_at(now_ms).unwrap_or(0)),
            at_ms: now_ms,
            verdict,
            last,
        })
    }

    fn record(&self, run_id: &str, at_ms: u64, wait: &mut dyn Wait) -> Result<OnceNews, i32> {
        let offset = offset_at(at_ms).unwrap_or(0);
        let success = Success {
            at_ms,
            done_ms: at_ms,
            offset,
            period: self.period().label(at_ms, offset),
            run_id: run_id.to_owned(),
            host: crate::sys::machine::host_name(),
        };
        match self.backend().write(&success, wait) {
            Ok(written) => Ok(OnceNews::Recorded { success: written }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                // The run succeeded: a record not written risks a second
                // run in the period, which is said wherever output goes.
                self.say(&format!(
                    "this run's success could not be recorded ({why}): the next run may do the job again in this period"
                ));
                Ok(OnceNews::NotRecorded { why })
            }
        }
    }
}
