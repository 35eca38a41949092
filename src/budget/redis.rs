//! A retry budget kept in Redis (or Valkey), shared by a fleet of hosts: the
//! same token bucket as the file store, updated by one Lua script that the
//! server runs atomically, never a read-modify-write from the client. The
//! password of the store's URL never shows in a message.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::budget::FailMode;
use crate::budget::bucket::Bucket;
use crate::budget::secret::{redact, scrub};

/// The namespace of budget keys in Redis.
pub const REDIS_PREFIX: &str = "backoff:budget:";

/// An idle budget key expires after this long, so that abandoned keys do
/// not pile up; every update starts the time again.
pub const REDIS_IDLE_TTL: Duration = Duration::from_hours(7 * 24);

/// The bucket update, run atomically by Redis. KEYS[1] is the bucket;
/// ARGV: operation (take, deposit, show, reset), burst and ratio in
/// millionths of a token, expiry in seconds. Returns {granted, level}.
const SCRIPT: &str = r"
local burst = tonumber(ARGV[2])
local ratio = tonumber(ARGV[3])
local raw = redis.call('GET', KEYS[1])
local level = burst
if raw then
  level = tonumber(raw)
  if level == nil or level < 0 or level ~= math.floor(level) then
    return redis.error_reply('corrupt budget state at ' .. KEYS[1])
  end
end
if level > burst then level = burst end
local op = ARGV[1]
local granted = 1
if op == 'show' then
  return {1, string.format('%d', level)}
elseif op == 'take' then
  if level >= 1000000 then level = level - 1000000 else granted = 0 end
elseif op == 'deposit' then
  level = math.min(burst, level + ratio)
elseif op == 'reset' then
  level = burst
end
redis.call('SET', KEYS[1], string.format('%d', level), 'EX', tonumber(ARGV[4]))
return {granted, string.format('%d', level)}
";

/// A budget kept in Redis.
pub struct RedisBudget {
    url: String,
    client: redis::Client,
    key: String,
    bucket: Bucket,
    timeout: Duration,
    fail: FailMode,
    script: redis::Script,
    connection: RefCell<Option<redis::Connection>>,
    warned: Cell<bool>,
}

impl std::fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudget")
            .field("url", &redact(&self.url))
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisBudget {
    /// A budget `key` at `url`. Checks the URL only: nothing connects until
    /// the first retry asks for a token, so a first attempt never waits.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable `redis://` URL; the message never shows
    /// the password.
    pub fn new(
        url: &str,
        key: &str,
        bucket: Bucket,
        timeout: Duration,
        fail: FailMode,
    ) -> Result<RedisBudget, String> {
        if !url.starts_with("redis://") && !url.starts_with("rediss://") {
            return Err(
                "expected a redis://[user:password@]host[:port][/db] URL (rediss:// for TLS)"
                    .into(),
            );
        }
        let client = redis::Client::open(url).map_err(|e| {
            let why = scrub(&e.to_string(), url);
            let userinfo = url.split_once("://").and_then(|(_, r)| r.rsplit_once('@'));
            if userinfo.is_some_and(|(u, _)| u.contains('/')) {
                format!("{why} (a '/' in a password is written %2F)")
            } else {
                why
            }
        })?;
        Ok(RedisBudget {
            url: url.to_owned(),
            client,
            key: format!("{REDIS_PREFIX}{key}"),
            bucket,
            timeout,
            fail,
            script: redis::Script::new(SCRIPT),
            connection: RefCell::new(None),
            warned: Cell::new(false),
        })
    }

    /// Runs the script for `op`; returns (granted, level).
    fn call(&self, op: &str) -> Result<(bool, u64), String> {
        let scrubbed = |e: redis::RedisError| scrub(&e.to_string(), &self.url);
        let mut slot = self.connection.borrow_mut();
        if slot.is_none() {
            let c = self
                .client
                .get_connection_with_timeout(self.timeout)
                .map_err(scrubbed)?;
            c.set_read_timeout(Some(self.timeout)).map_err(scrubbed)?;
            c.set_write_timeout(Some(self.timeout)).map_err(scrubbed)?;
            *slot = Some(c);
        }
        let Some(connection) = slot.as_mut() else {
            return Err("no connection".into());
        };
        let answer: Result<(i64, String), _> = self
            .script
            .key(&self.key)
            .arg(op)
            .arg(self.bucket.burst)
            .arg(self.bucket.ratio)
            .arg(REDIS_IDLE_TTL.as_secs())
            .invoke(connection);
        match answer {
            Ok((granted, level)) => {
                let level = level
                    .parse()
                    .map_err(|_| "corrupt budget state".to_owned())?;
                Ok((granted == 1, level))
            }
            Err(e) => {
                // Start afresh next time: the connection may be broken.
                *slot = None;
                Err(scrubbed(e))
            }
        }
    }

    /// Says once that the store is unavailable, and what happens instead.
    fn warn(&self, error: &str) {
        if !self.warned.replace(true) {
            let then = match self.fail {
                FailMode::Open => "retrying under the local policy",
                FailMode::Closed => "not retrying (--budget-store-fail closed)",
            };
            crate::report::say(&format!(
                "retry budget store {} unavailable ({error}); {then}",
                redact(&self.url)
            ));
        }
    }

    /// Takes a token; when the store cannot be reached, the fail mode
    /// decides.
    pub fn take(&self) -> bool {
        match self.call("take") {
            Ok((granted, _)) => granted,
            Err(e) => {
                self.warn(&e);
                self.fail == FailMode::Open
            }
        }
    }

    /// Deposits after a success; an unreachable store is reported once.
    pub fn deposit(&self) {
        if let Err(e) = self.call("deposit") {
            self.warn(&e);
        }
    }

    /// The current level, in millionths of a token.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached; the message never shows the
    /// password.
    pub fn level(&self) -> Result<u64, String> {
        self.call("show").map(|(_, level)| level)
    }

    /// Fills the bucket again.
    ///
    /// # Errors
    ///
    /// As `level`.
    pub fn reset(&self) -> Result<(), String> {
        self.call("reset").map(|_| ())
    }

    /// Where the budget lives, without the password.
    pub fn describe(&self) -> String {
        format!("{} key {}", redact(&self.url), self.key)
    }
}
