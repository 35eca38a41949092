//! The rules of `--lock`: who holds a lock, as its holder records it for
//! the runs it keeps out (`backoff lock show`, the line of a run that finds
//! it held). Pure: the stores are in `store`.
//!
//! A record is one line of at most `MAX_RECORD` bytes:
//!
//! ```text
//! backoff-lock v1 pid 4242 since 1764864000000 token 17 run 6f1c…-… host web-3
//! ```
//!
//! `token` is `-` where the store gives none (a file). A record read back
//! may have been written by anyone who could write the store: every field
//! is checked, a host name keeps only the characters host names have, and
//! a record out of shape is no record.
//!
//! A lease (the lock in Redis) is held only while it is renewed, and its
//! holder must be gone before the server can free it: `Lease` says when a
//! holder that cannot renew starts ending its attempt, and how short a
//! `--lock-ttl` leaves no time for that. The fencing tokens of a lease
//! follow `next_fence`.

use std::time::Duration;

/// What a lock's store calls, from a thread of its own, when the run's
/// hold on the lock is lost: it wakes the run. Its type is here, below both
/// the stores that call it and the executor that makes it.
pub type Alarm = Box<dyn Fn() + Send + Sync>;

/// The longest record read or written.
pub const MAX_RECORD: usize = 512;

/// The longest host name kept (DNS's limit).
const MAX_HOST: usize = 253;

/// A run holding a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its process id, on its host.
    pub pid: u32,
    /// Since when it holds the lock, in Unix milliseconds.
    pub since_ms: u64,
    /// The fencing token its acquisition took, where the store gives one.
    pub token: Option<u64>,
    /// Its run id (`BACKOFF_RUN_ID`).
    pub run_id: String,
    /// Its host name.
    pub host: String,
}

impl Holder {
    /// This record's line, newline included.
    pub fn record(&self) -> String {
        let token = self.token.map_or_else(|| "-".to_owned(), |t| t.to_string());
        let line = format!(
            "backoff-lock v1 pid {} since {} token {token} run {} host {}\n",
            self.pid,
            self.since_ms,
            clean(&self.run_id, 64),
            clean(&self.host, MAX_HOST)
        );
        line
    }

    /// The holder a record names; `None` when `text` is not a record.
    pub fn parse(text: &[u8]) -> Option<Holder> {
        let words = words(text, MAX_RECORD)?;
        let [
            "backoff-lock",
            "v1",
            "pid",
            pid,
            "since",
            since,
            "token",
            token,
            "run",
            run_id,
            "host",
            host,
        ] = words[..]
        else {
            return None;
        };
        let token = match token {
            "-" => None,
            t => Some(number(t)?),
        };
        if clean(run_id, 64) != run_id || clean(host, MAX_HOST) != host || host.is_empty() {
            return None;
        }
        Some(Holder {
            pid: u32::try_from(number(pid)?).ok()?,
            since_ms: number(since)?,
            token,
            run_id: run_id.to_owned(),
            host: host.to_owned(),
        })
    }
}

/// Why a run that took a lock waits before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    /// How long.
    pub wait: Duration,
    /// Why.
    pub why: Forgotten,
}

/// How a lock's store may have forgotten a holder, which has not yet
/// noticed that it lost the lock and ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgotten {
    /// The lock file was made anew: the holder of a removed one looks at
    /// its file every so often.
    File,
    /// Redis had no trace of the lock (its first use, or the store lost its
    /// data): a holder it forgot ends within its lease.
    Lease,
    /// Redis keeps a time before which the next holder may not start: the
    /// end of a lease `lock reset --force` removed, or the rest of the
    /// wait of a run that ended during it.
    Pending,
}

/// A lock as `backoff lock show` and `reset` find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    /// Whether a run holds it.
    pub held: bool,
    /// The record of its holder, or of its last holder when it is free
    /// and the record was left (a holder killed).
    pub holder: Option<Holder>,
    /// For a lease: how long it lasts unless renewed, as the store's clock
    /// tells (its holder's liveness, wherever it runs).
    pub lease_left: Option<Duration>,
    /// What was out of shape in the store, when something was (`show`), or
    /// was repaired (`reset`).
    pub corrupt: Option<String>,
    /// The slots of `--lock-limit`, each as a lock of its own, where KEY
    /// has any.
    pub slots: Vec<LockState>,
}

/// The timing of a lease of `ttl`, whose holder's attempt has
/// `kill_after` to end once told to.
///
/// The holder knows until when its lease surely lasts: `ttl` from the
/// moment it *sent* its last renewal that was answered (the server began
/// the new term later than that). It renews every third of `ttl`; one that
/// gets no answer is tried again, until the holder must start ending its
/// attempt: `kill_after` plus a margin before that sure end, so that the
/// attempt has had `--signal`, then SIGKILL, before the server can give
/// the lease to another run. The margin covers a server clock that runs
/// faster than the holder's (1 % of the term, far beyond what NTP allows)
/// and the time a signal takes to be sent and the attempt to be reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// `--lock-ttl`.
    pub ttl: Duration,
    /// `--kill-after`.
    pub kill_after: Duration,
}

/// The part of the margin that does not grow with the term.
const MARGIN: Duration = Duration::from_millis(200);

impl Lease {
    /// How often the lease is renewed.
    pub fn every(self) -> Duration {
        self.ttl / 3
    }

    /// How long before the lease's sure end its holder's attempt must be
    /// gone: the margin for clock drift and for reaping.
    pub fn margin(self) -> Duration {
        self.ttl / 100 + MARGIN
    }

    /// When a holder whose lease surely lasts `until` starts ending its
    /// attempt, if it has not renewed it by then: both readings of one
    /// clock that counts time asleep (`sys::since_boot`), since the
    /// server's time runs on while the host sleeps.
    pub fn end_from(self, until: Duration) -> Duration {
        until.saturating_sub(self.margin().saturating_add(self.kill_after))
    }

    /// The shortest `--lock-ttl`, in whole seconds, for `kill_after`: after
    /// a renewal that got no answer, half a term is left to try again
    /// before the holder must start ending its attempt. `ttl / 2 - ttl /
    /// 100 >= kill_after + MARGIN`, so `ttl >= (kill_after + MARGIN) *
    /// 100 / 49`.
    pub fn shortest_ttl(kill_after: Duration) -> Duration {
        let need = kill_after.saturating_add(MARGIN).as_millis() * 100 / 49;
        let secs = u64::try_from(need.div_ceil(1000)).unwrap_or(u64::MAX);
        Duration::from_secs(secs.max(1))
    }

    /// Whether the term leaves time to renew and to end the attempt (see
    /// `shortest_ttl`).
    pub fn is_long_enough(self) -> bool {
        self.ttl >= Lease::shortest_ttl(self.kill_after)
    }
}

/// The most runs `--lock-limit` lets hold a lock at once: a lock in files
/// is a file per slot, which a run looks through.
pub const MAX_SLOTS: u32 = 1000;

/// The largest fencing token backoff hands out: every integer up to it is
/// exact in Redis' Lua numbers (doubles), and a JSON reader's.
pub const MAX_FENCE: u64 = (1 << 53) - 1;

/// The fencing token of an acquisition, given the last one handed out
/// (`None` when the store holds none: the lock's first use, or a store
/// that lost its data) and the store's clock, in microseconds since 1970:
/// one more than the last, and never below the clock. A store that lost
/// its counter hands out its clock, above every token handed out before
/// while its clock is not behind the one that handed those out (a token
/// runs ahead of the clock only by the acquisitions made within one
/// microsecond). `None` past `MAX_FENCE`: the counter is out of bounds.
/// The lock script computes the same in Lua.
pub fn next_fence(last: Option<u64>, now_us: u64) -> Option<u64> {
    let next = last.map_or(0, |l| l.saturating_add(1)).max(now_us);
    (next <= MAX_FENCE).then_some(next)
}

/// The words of a one-line record of at most `max` bytes (a newline at
/// its end left out); `None` for a longer text, or one not UTF-8.
pub(crate) fn words(text: &[u8], max: usize) -> Option<Vec<&str>> {
    if text.len() > max {
        return None;
    }
    let text = std::str::from_utf8(text).ok()?;
    let line = text.strip_suffix('\n').unwrap_or(text);
    Some(line.split(' ').collect())
}

/// A decimal number of at most 19 digits, without sign or spaces.
pub(crate) fn number(word: &str) -> Option<u64> {
    if word.is_empty() || word.len() > 19 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// `s` with only the characters of host names and UUIDs (letters, digits,
/// `.`, `-`, `_`), any other replaced by `?`, at most `max` of them; `?`
/// for nothing at all.
fn clean(s: &str, max: usize) -> String {
    kept(s, max, &[])
}

/// `s` with only the characters of host names and UUIDs, and those of
/// `also`, any other replaced by `?`, at most `max` of them; `?` for
/// nothing at all.
pub(crate) fn kept(s: &str, max: usize, also: &[char]) -> String {
    let kept: String = s
        .chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') || also.contains(&c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    if kept.is_empty() {
        "?".to_owned()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder() -> Holder {
        Holder {
            pid: 4242,
            since_ms: 1_764_864_000_000,
            token: Some(17),
            run_id: "6f1c2b9e-0d3a-4c1e-9b7a-1f2e3d4c5b6a".to_owned(),
            host: "web-3.example".to_owned(),
        }
    }

    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let h = holder();
        assert_eq!(
            h.record(),
            "backoff-lock v1 pid 4242 since 1764864000000 token 17 run 6f1c2b9e-0d3a-4c1e-9b7a-1f2e3d4c5b6a host web-3.example\n"
        );
        assert_eq!(Holder::parse(h.record().as_bytes()), Some(h.clone()));
        let file = Holder { token: None, ..h };
        assert!(file.record().contains(" token - "));
        assert_eq!(Holder::parse(file.record().as_bytes()), Some(file));
    }

    #[test]
    fn a_host_name_keeps_only_what_host_names_hold() {
        let h = Holder {
            host: "evil\u{1b}[2J host\nname".to_owned(),
            ..holder()
        };
        let record = h.record();
        assert!(record.ends_with(" host evil??2J?host?name\n"), "{record}");
        assert_eq!(
            Holder::parse(record.as_bytes()).unwrap().host,
            "evil??2J?host?name"
        );
        let empty = Holder {
            host: String::new(),
            ..holder()
        };
        assert!(Holder::parse(empty.record().as_bytes()).is_some());
    }

    #[test]
    fn a_holder_cut_off_starts_ending_its_attempt_in_time_for_the_server() {
        let lease = Lease {
            ttl: Duration::from_secs(30),
            kill_after: Duration::from_secs(5),
        };
        assert_eq!(lease.every(), Duration::from_secs(10));
        assert_eq!(lease.margin(), Duration::from_millis(500));
        let t0 = Duration::from_secs(1000);
        let until = t0 + lease.ttl;
        // SIGTERM at 24.5 s, SIGKILL at 29.5 s: gone before 30 s.
        assert_eq!(lease.end_from(until), t0 + Duration::from_millis(24_500));
        assert!(lease.end_from(until) + lease.kill_after < until);
        // A missed renewal at 10 s leaves 14.5 s to try again.
        assert!(lease.end_from(until).saturating_sub(t0 + lease.every()) >= lease.ttl / 3);
        assert_eq!(lease.end_from(Duration::from_secs(1)), Duration::ZERO);
    }

    #[test]
    fn a_term_too_short_for_kill_after_is_told_by_the_shortest_that_fits() {
        assert_eq!(
            Lease::shortest_ttl(Duration::from_secs(5)),
            Duration::from_secs(11)
        );
        assert_eq!(Lease::shortest_ttl(Duration::ZERO), Duration::from_secs(1));
        assert_eq!(
            Lease::shortest_ttl(Duration::from_millis(100)),
            Duration::from_secs(1)
        );
        assert_eq!(
            Lease::shortest_ttl(Duration::MAX),
            Duration::from_secs(u64::MAX)
        );
        for kill_after in [0, 100, 300, 1000, 5000, 14_000, 60_000] {
            let kill_after = Duration::from_millis(kill_after);
            let ttl = Lease::shortest_ttl(kill_after);
            let lease = Lease { ttl, kill_after };
            assert!(lease.is_long_enough());
            // Half a term after a missed renewal is left to try again.
            let t0 = Duration::from_secs(1000);
            let missed = t0 + lease.every();
            assert!(
                lease.end_from(t0 + ttl) >= missed + ttl / 6,
                "{kill_after:?}"
            );
            if ttl > Duration::from_secs(1) {
                let shorter = Lease {
                    ttl: ttl.saturating_sub(Duration::from_secs(1)),
                    kill_after,
                };
                assert!(!shorter.is_long_enough());
            }
        }
        let default = Lease {
            ttl: Duration::from_secs(30),
            kill_after: Duration::from_secs(5),
        };
        assert!(default.is_long_enough());
        let long_kill = Lease {
            ttl: Duration::from_secs(30),
            kill_after: Duration::from_secs(15),
        };
        assert!(!long_kill.is_long_enough());
    }

    #[test]
    fn fencing_tokens_grow_and_never_fall_below_the_stores_clock() {
        assert_eq!(next_fence(Some(4), 0), Some(5));
        assert_eq!(
            next_fence(None, 1_764_864_000_000_000),
            Some(1_764_864_000_000_000)
        );
        // A counter that a store lost comes back at its clock, above the
        // tokens it handed out before.
        let before = next_fence(Some(7), 1_764_864_000_000_000).unwrap();
        let after_loss = next_fence(None, 1_764_864_000_000_001).unwrap();
        assert!(after_loss > before);
        // Two acquisitions in one microsecond still differ.
        assert_eq!(
            next_fence(Some(before), 1_764_864_000_000_000),
            Some(before + 1)
        );
        assert_eq!(next_fence(Some(MAX_FENCE - 1), 0), Some(MAX_FENCE));
        assert_eq!(next_fence(Some(MAX_FENCE), 0), None);
        assert_eq!(next_fence(Some(u64::MAX), 0), None);
        assert_eq!(next_fence(None, u64::MAX), None);
    }

    #[test]
    fn what_is_not_a_record_is_none() {
        let good = holder().record();
        for bad in [
            String::new(),
            "backoff-lock v2 pid 1 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid -1 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid 99999999999 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host h extra\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host h\u{1b}\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host \n".to_owned(),
            "backoff-lock v1 pid 1 since 99999999999999999999 token - run r host h\n".to_owned(),
            good.replace("token 17", "token x"),
            format!("{good}{}", "x".repeat(MAX_RECORD)),
        ] {
            assert_eq!(Holder::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(Holder::parse(&[0xff, 0xfe]), None);
    }
}
