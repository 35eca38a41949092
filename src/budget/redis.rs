//! A retry budget kept in Redis (or Valkey), shared by a fleet of hosts: the
//! same token bucket as the file store, updated by one Lua script that the
//! server runs atomically, never a read-modify-write from the client. The
//! password of the store's URL never shows in a message.
//!
//! Each call to the store runs on a thread of its own, and backoff waits for
//! its answer, for a terminating signal and for the timeout in one wait: a
//! store that never answers (a frozen server, a slow name lookup) costs at
//! most the timeout, and a signal ends the wait at once. A call abandoned
//! that way ends by itself (its socket's timeouts are the same), and its
//! connection is never used again.

use std::cell::RefCell;
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::budget::bucket::Bucket;
use crate::budget::secret::{redact, scrub};
use crate::budget::{FailMode, StoreError, deadline_after};
use crate::duration::human;
use crate::run::{Wait, Waited};

/// The namespace of budget keys in Redis.
pub const REDIS_PREFIX: &str = "backoff:budget:";

/// An idle budget key expires after this long, so that abandoned keys do
/// not pile up; every update starts the time again.
pub const REDIS_IDLE_TTL: Duration = Duration::from_hours(7 * 24);

/// The bucket update, run atomically by Redis. KEYS[1] is the bucket;
/// ARGV: operation (take, deposit, show, reset), burst and ratio in
/// millionths of a token, expiry in seconds, and what a corrupt state
/// becomes for take and deposit: `repair` (a full bucket) or `keep` (an
/// error, the state left alone). Reset never reads the state, so it repairs
/// any (a value of the wrong type included). Returns {granted, level,
/// repaired}.
const SCRIPT: &str = r"
local op = ARGV[1]
local burst = tonumber(ARGV[2])
local ratio = tonumber(ARGV[3])
local level = burst
local repaired = 0
if op ~= 'reset' then
  local raw = redis.call('GET', KEYS[1])
  if raw then
    level = tonumber(raw)
    if level == nil or level < 0 or level ~= math.floor(level) then
      if op == 'show' or ARGV[5] ~= 'repair' then
        return redis.error_reply('corrupt budget state at ' .. KEYS[1])
      end
      level = burst
      repaired = 1
    end
  end
end
if level > burst then level = burst end
local granted = 1
if op == 'show' then
  return {1, string.format('%d', level), 0}
elseif op == 'take' then
  if level >= 1000000 then level = level - 1000000 else granted = 0 end
elseif op == 'deposit' then
  level = math.min(burst, level + ratio)
end
redis.call('SET', KEYS[1], string.format('%d', level), 'EX', tonumber(ARGV[4]))
return {granted, string.format('%d', level), repaired}
";

/// A budget kept in Redis.
pub struct RedisBudget {
    url: String,
    client: redis::Client,
    key: String,
    bucket: Bucket,
    timeout: Duration,
    /// A corrupt state becomes a full bucket (`--budget-store-fail open`).
    repair: bool,
    script: redis::Script,
    connection: RefCell<Option<redis::Connection>>,
}

impl std::fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudget")
            .field("url", &redact(&self.url))
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// One call to the store, made on a thread of its own.
struct Call {
    client: redis::Client,
    connection: Option<redis::Connection>,
    script: redis::Script,
    key: String,
    op: &'static str,
    bucket: Bucket,
    repair: bool,
    deadline: Instant,
}

/// What the script answered.
struct Reply {
    granted: bool,
    level: u64,
    /// The state was corrupt, and is a full bucket now.
    repaired: bool,
}

/// What a call answered, or why not, and the connection to use next time,
/// if it is still sound.
type Answer = (Result<Reply, String>, Option<redis::Connection>);

impl Call {
    /// Connects if need be and runs the script, every step bounded by the
    /// time left before the deadline.
    fn run(mut self) -> Answer {
        let answer = self.invoke();
        let connection = if answer.is_ok() {
            self.connection
        } else {
            // Start afresh next time: the connection may be broken.
            None
        };
        (answer, connection)
    }

    fn invoke(&mut self) -> Result<Reply, String> {
        let why = |e: &redis::RedisError| match (e.code(), e.detail()) {
            _ if e.is_timeout() => "timed out".to_owned(),
            // The server's own words, as it said them.
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => e.to_string(),
        };
        let left = || {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err("timed out".to_owned())
            } else {
                Ok(left)
            }
        };
        if self.connection.is_none() {
            let c = self
                .client
                .get_connection_with_timeout(left()?)
                .map_err(|e| why(&e))?;
            self.connection = Some(c);
        }
        let Some(connection) = self.connection.as_mut() else {
            return Err("no connection".into());
        };
        let limit = left()?;
        connection
            .set_read_timeout(Some(limit))
            .and_then(|()| connection.set_write_timeout(Some(limit)))
            .map_err(|e| why(&e))?;
        let (granted, level, repaired): (i64, String, i64) = self
            .script
            .key(&self.key)
            .arg(self.op)
            .arg(self.bucket.burst)
            .arg(self.bucket.ratio)
            .arg(REDIS_IDLE_TTL.as_secs())
            .arg(if self.repair { "repair" } else { "keep" })
            .invoke(connection)
            .map_err(|e| why(&e))?;
        Ok(Reply {
            granted: granted == 1,
            level: level
                .parse()
                .map_err(|_| "corrupt budget state".to_owned())?,
            repaired: repaired == 1,
        })
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
            repair: fail == FailMode::Open,
            script: redis::Script::new(SCRIPT),
            connection: RefCell::new(None),
        })
    }

    /// Runs the script for `op` on a thread of its own and waits, through
    /// `wait`, for its answer, at most the timeout. A corrupt state that
    /// became a full bucket is reported here.
    fn call(&self, op: &'static str, wait: &mut dyn Wait) -> Result<(bool, u64), StoreError> {
        let failed = |e: String| StoreError::Failed(scrub(&e, &self.url));
        let deadline = deadline_after(self.timeout);
        let call = Call {
            client: self.client.clone(),
            connection: self.connection.take(),
            script: self.script.clone(),
            key: self.key.clone(),
            op,
            bucket: self.bucket,
            repair: self.repair,
            deadline,
        };
        // The thread closes `done` when it has answered (or died).
        let (ready, done) = std::io::pipe().map_err(|e| failed(e.to_string()))?;
        let (tx, rx) = mpsc::channel::<Answer>();
        std::thread::Builder::new()
            .name("budget store".into())
            .spawn(move || {
                let _ = tx.send(call.run());
                drop(done);
            })
            .map_err(|e| failed(format!("cannot start a thread: {e}")))?;
        let waited = wait.wait_ready(Some(ready.as_fd()), deadline);
        if let Waited::Signal(sig) = waited {
            return Err(StoreError::Interrupted(sig));
        }
        match rx.try_recv() {
            Ok((answer, connection)) => {
                self.connection.replace(connection);
                let reply = answer.map_err(failed)?;
                if reply.repaired {
                    crate::report::say(&format!(
                        "retry budget store {}: corrupt budget state at {}; starting a fresh bucket",
                        self.url(),
                        self.key
                    ));
                }
                Ok((reply.granted, reply.level))
            }
            Err(_) if waited == Waited::Ready => Err(failed("the store call failed".into())),
            Err(_) => Err(failed(format!("timed out after {}", human(self.timeout)))),
        }
    }

    /// Takes a token for a retry; `Ok(false)` when there is none.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached in time, or a signal ends the wait;
    /// the message never shows the password.
    pub fn take(&self, wait: &mut dyn Wait) -> Result<bool, StoreError> {
        self.call("take", wait).map(|(granted, _)| granted)
    }

    /// Deposits after a success.
    ///
    /// # Errors
    ///
    /// As `take`.
    pub fn deposit(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        self.call("deposit", wait).map(|_| ())
    }

    /// The current level, in millionths of a token.
    ///
    /// # Errors
    ///
    /// As `take`.
    pub fn level(&self, wait: &mut dyn Wait) -> Result<u64, StoreError> {
        self.call("show", wait).map(|(_, level)| level)
    }

    /// Fills the bucket again.
    ///
    /// # Errors
    ///
    /// As `level`.
    pub fn reset(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        self.call("reset", wait).map(|_| ())
    }

    /// The server's URL, without the password.
    pub fn url(&self) -> String {
        redact(&self.url)
    }

    /// Where the budget lives, without the password.
    pub fn describe(&self) -> String {
        format!("{} key {}", redact(&self.url), self.key)
    }
}
