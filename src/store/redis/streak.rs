//! `--alert-after` for a fleet: the count of a job's failed runs in a row
//! in Redis (or a Redis Cluster), the string `backoff:streak:KEY` of digits
//! alone, changed only by one Lua script, so that runs that end at once on
//! several hosts never lose a count. A failed run adds one (`SET`, which
//! also replaces a key of another type); a success removes the key, so
//! that a key exists only while a job's runs fail in a row.

use std::rc::Rc;
use std::time::Duration;

use super::{Lua, Server};
use crate::fleet::Found;
use crate::fleet::streak::{MAX_FAILURES, Tally, parse_count};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::file::streak::corrupt_line;
use crate::store::{Backend, StoreError, StreakBackend};

/// The namespace of failure counts in Redis.
pub const REDIS_STREAK_PREFIX: &str = "backoff:streak:";

/// The count's script. KEYS[1]: the count. ARGV: operation (`fail` or
/// `reset`), `--alert-after`, the call's expiry (see `EXPIRY`). A key that
/// is not a string of at most 20 digits, or holds more than the most a
/// count may be, is corrupt: a failure writes `--alert-after` in its
/// place, a success removes it. Returns {found (`nothing`, `state` or
/// `corrupt`), the count before (empty but for a state), the count after,
/// the key's type}.
const STREAK_SCRIPT: &str = r"
local op = ARGV[1]
local alert_after = tonumber(ARGV[2])
local most = tonumber(ARGV[3])
local kind = redis.call('TYPE', KEYS[1]).ok
local found, count = 'nothing', nil
if kind == 'string' then
  found = 'corrupt'
  local raw = redis.call('GET', KEYS[1])
  if #raw <= 20 and string.match(raw, '^%d+$') then
    local v = tonumber(raw)
    if v <= most then found, count = 'state', v end
  end
elseif kind ~= 'none' then
  found = 'corrupt'
end
local after = 0
if op == 'fail' then
  if found == 'state' then
    after = math.min(count + 1, most)
  elseif found == 'nothing' then
    after = 1
  else
    after = math.max(1, math.min(alert_after, most))
  end
  redis.call('SET', KEYS[1], string.format('%d', after))
elseif op == 'reset' then
  if found ~= 'nothing' then redis.call('DEL', KEYS[1]) end
else
  return redis.error_reply('ERR unknown operation')
end
local before = ''
if count ~= nil then before = string.format('%d', count) end
return {found, before, string.format('%d', after), kind}
";

/// A count of failed runs kept in Redis, shared by a fleet.
pub struct RedisStreak {
    server: Rc<Server>,
    key: String,
    alert_after: u64,
    timeout: Duration,
    script: Lua,
    warnings: Warnings,
}

impl std::fmt::Debug for RedisStreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStreak")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisStreak {
    /// The count `key` at `url`; each call waits at most `timeout`.
    /// Checks the URL only.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub fn new(
        url: &str,
        key: &str,
        alert_after: u64,
        timeout: Duration,
        warnings: Warnings,
    ) -> Result<RedisStreak, String> {
        Ok(RedisStreak {
            server: Server::shared(url)?,
            key: format!("{REDIS_STREAK_PREFIX}{key}"),
            alert_after,
            timeout,
            script: Lua::decision(STREAK_SCRIPT),
            warnings,
        })
    }
}

impl Backend for RedisStreak {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
    }
}

/// Reads the script's reply; `None` for anything else.
fn reply(answer: &[String]) -> Option<(Found<u64>, u64, &str)> {
    let [found, before, after, kind] = answer else {
        return None;
    };
    let before = match found.as_str() {
        "nothing" => Found::Nothing,
        "state" => Found::Held(parse_count(before.as_bytes())?),
        "corrupt" => Found::Corrupt,
        _ => return None,
    };
    Some((before, parse_count(after.as_bytes())?, kind))
}

impl StreakBackend for RedisStreak {
    fn tally(&self, failed: bool, wait: &mut dyn Wait) -> Result<Tally, StoreError> {
        let op = if failed { "fail" } else { "reset" };
        let args = vec![
            op.to_owned(),
            self.alert_after.to_string(),
            MAX_FAILURES.to_string(),
        ];
        let answer = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        let (before, after, kind) = reply(&answer).ok_or_else(|| {
            StoreError::Failed("unexpected reply from the failure count's script".into())
        })?;
        if before == Found::Corrupt {
            let why = if kind == "string" {
                format!("{} holds no count", self.key)
            } else {
                format!(
                    "{} holds a {}, not a count",
                    self.key,
                    crate::report::cut_quote(kind, 32)
                )
            };
            self.warnings.alert(&corrupt_line(&why, failed));
        }
        Ok(Tally { before, after })
    }
}
