//! Retry budgets kept in Redis: the token bucket's script, run atomically
//! on the budget's key, and what it answers.

use std::rc::Rc;
use std::time::Duration;

use crate::fleet::bucket::{Bucket, MAX_BURST, UNIT};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::{
    Backend as StoreBackend, BudgetBackend, FailMode, Found, Level, Refill, StoreError,
};

use crate::store::redis::{Lua, REDIS_IDLE_TTL, Server};

/// The namespace of budget keys in Redis.
pub const REDIS_PREFIX: &str = "backoff:budget:";

/// The bucket update, run atomically by Redis. KEYS[1] is the bucket, a
/// hash of three fields: `level`, and the `burst` and `ratio` of the run
/// that last changed it, each in millionths of a token and digits alone, as
/// the file's record (a string of digits alone, the level, is a state of an
/// older version of backoff: read, and replaced by a hash at the next
/// change). ARGV: operation (take, deposit, show, reset), burst and ratio
/// in millionths of a token, expiry in seconds, what a corrupt state
/// becomes for take and deposit: `repair` (a full bucket) or `keep` (an
/// error, the state left alone), and for reset `recorded` (fill to the
/// burst the state records, if it records a valid one) or `given`. Reset
/// repairs any state (a value of the wrong type included), and writes
/// nothing where there is none. Returns {granted, level, repaired, burst,
/// ratio}: for show, the burst and ratio the state records (empty when it
/// records none); else those written (for a reset that found nothing,
/// those it would have written); a reset adds what it found (`nothing`,
/// `state` or `corrupt`) and the level, burst and ratio of the state (each
/// empty but for a state, the burst and ratio for one that records them).
const SCRIPT: &str = r"
local op = ARGV[1]
local burst = tonumber(ARGV[2])
local ratio = tonumber(ARGV[3])
local limit = 1000000000000
-- Digits alone, as written here, and no more than a u64 has: tonumber
-- would take 'inf', '0x10' or ' 5' too.
local function digits(raw)
  if type(raw) == 'string' and #raw <= 20 and string.match(raw, '^%d+$') then
    return tonumber(raw)
  end
  return nil
end
-- The state: its level, the burst and ratio it records (nil for a level
-- alone), or nil and an error for a state that is not one.
local function state()
  local kind = redis.call('TYPE', KEYS[1])['ok']
  if kind == 'none' then return burst, nil, nil end
  if kind == 'string' then
    local level = digits(redis.call('GET', KEYS[1]))
    if level == nil then return nil end
    return level, nil, nil
  end
  if kind ~= 'hash' or redis.call('HLEN', KEYS[1]) ~= 3 then return nil end
  local got = redis.call('HMGET', KEYS[1], 'level', 'burst', 'ratio')
  local l, b, r = digits(got[1]), digits(got[2]), digits(got[3])
  if l == nil or b == nil or r == nil then return nil end
  if b < 1000000 or b > limit or r > b or l > b then return nil end
  return l, b, r
end
local level, had_burst, had_ratio = burst, nil, nil
local repaired = 0
if op ~= 'reset' or ARGV[6] == 'recorded' then
  local l, b, r = state()
  if l ~= nil then
    level, had_burst, had_ratio = l, b, r
  elseif op == 'reset' then
    level = burst
  elseif op == 'show' or ARGV[5] ~= 'repair' then
    return redis.error_reply('corrupt budget state at ' .. KEYS[1])
  else
    level = burst
    repaired = 1
  end
end
local function n(x)
  if x == nil then return '' end
  return string.format('%d', x)
end
local found, old = nil, {'', '', ''}
if op == 'reset' then
  if redis.call('TYPE', KEYS[1])['ok'] == 'none' then
    return {1, n(burst), 0, n(burst), n(ratio), 'nothing', '', '', ''}
  end
  local l, b, r = state()
  if l == nil then
    found = 'corrupt'
  else
    found, old = 'state', {n(l), n(b), n(r)}
  end
end
if op == 'show' then
  if had_burst ~= nil and level > had_burst then level = had_burst end
  if had_burst == nil and level > burst then level = burst end
  return {1, n(level), 0, n(had_burst), n(had_ratio)}
end
if op == 'reset' and had_burst ~= nil then
  burst, ratio = had_burst, had_ratio
end
if level > burst then level = burst end
local granted = 1
if op == 'take' then
  if level >= 1000000 then level = level - 1000000 else granted = 0 end
elseif op == 'deposit' then
  level = math.min(burst, level + ratio)
elseif op == 'reset' then
  level = burst
end
-- A hash of the three fields is written over, never removed first: while
-- its slot migrates, a key removed within a script cannot be written again
-- on this node (the write is redirected), and would be lost. Anything else
-- (a level alone, a corrupt value) is replaced.
local fields = redis.call('TYPE', KEYS[1])['ok'] == 'hash'
  and redis.call('HLEN', KEYS[1]) == 3
  and redis.call('HEXISTS', KEYS[1], 'level') == 1
  and redis.call('HEXISTS', KEYS[1], 'burst') == 1
  and redis.call('HEXISTS', KEYS[1], 'ratio') == 1
if not fields then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'level', n(level), 'burst', n(burst), 'ratio', n(ratio))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
if op == 'reset' then
  return {granted, n(level), repaired, n(burst), n(ratio), found, old[1], old[2], old[3]}
end
return {granted, n(level), repaired, n(burst), n(ratio)}
";

/// What the budget script answered.
#[derive(Debug, PartialEq, Eq)]
struct BudgetReply {
    granted: bool,
    level: Level,
    /// For a reset, what it found.
    found: Option<Found<Level>>,
}

/// Reads the budget script's reply, and whether it repaired a corrupt
/// state; `None` for anything that is not a reply the script makes (a
/// bucket no run can be given included).
fn budget_reply(reply: &[String]) -> Option<(BudgetReply, bool)> {
    let (found, reply) = match reply {
        [answer @ .., found, level, burst, ratio] if answer.len() == 5 => {
            let empty = [level, burst, ratio].iter().all(|s| s.is_empty());
            let found = match found.as_str() {
                "nothing" if empty => Found::Nothing,
                "corrupt" if empty => Found::Corrupt,
                "state" => Found::Held(budget_level(level, burst, ratio)?),
                _ => return None,
            };
            (Some(found), answer)
        }
        answer => (None, answer),
    };
    let [granted, level, repaired, burst, ratio] = reply else {
        return None;
    };
    let reply = BudgetReply {
        granted: granted == "1",
        level: budget_level(level, burst, ratio)?,
        found,
    };
    Some((reply, repaired == "1"))
}

/// A level of the budget script's reply, with the bucket it records (none
/// when both are empty); `None` for one no run can be given.
fn budget_level(level: &str, burst: &str, ratio: &str) -> Option<Level> {
    let micros = level.parse().ok()?;
    let made = match (burst, ratio) {
        ("", "") => None,
        (burst, ratio) => {
            let (burst, ratio) = (burst.parse().ok()?, ratio.parse().ok()?);
            if !(UNIT..=MAX_BURST * UNIT).contains(&burst) || ratio > burst {
                return None;
            }
            Some(Bucket { burst, ratio })
        }
    };
    if made.is_some_and(|b| micros > b.burst) {
        return None;
    }
    Some(Level { micros, made })
}

/// A budget kept in Redis.
pub struct RedisBudget {
    server: Rc<Server>,
    timeout: Duration,
    key: String,
    bucket: Bucket,
    /// A corrupt state becomes a full bucket (`--budget-store-fail open`).
    repair: bool,
    script: Lua,
    /// Where a repaired state is told.
    warnings: Warnings,
}

impl std::fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudget")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl StoreBackend for RedisBudget {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
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
        warnings: Warnings,
    ) -> Result<RedisBudget, String> {
        Ok(RedisBudget {
            server: Server::shared(url)?,
            timeout,
            key: format!("{REDIS_PREFIX}{key}"),
            bucket,
            repair: fail == FailMode::Open,
            script: Lua::decision(SCRIPT),
            warnings,
        })
    }

    /// Runs the script for `op` and reads its answer. A corrupt state that
    /// became a full bucket is reported here.
    fn call(
        &self,
        op: &'static str,
        refill: Refill,
        wait: &mut dyn Wait,
    ) -> Result<BudgetReply, StoreError> {
        let args = vec![
            op.to_owned(),
            self.bucket.burst.to_string(),
            self.bucket.ratio.to_string(),
            REDIS_IDLE_TTL.as_secs().to_string(),
            if self.repair { "repair" } else { "keep" }.to_owned(),
            match refill {
                Refill::Recorded => "recorded",
                Refill::Given => "given",
            }
            .to_owned(),
        ];
        let reply = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        let (answer, repaired) = budget_reply(&reply)
            .ok_or_else(|| StoreError::Failed("corrupt budget state".into()))?;
        if repaired {
            self.warnings.warn(&format!(
                "retry budget store {}: corrupt budget state at {}; starting a fresh bucket",
                self.server.url(),
                self.key
            ));
        }
        Ok(answer)
    }
}

impl BudgetBackend for RedisBudget {
    /// Takes a token for a retry; `Ok(false)` when there is none.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached in time, or a signal ends the wait;
    /// the message never shows the password.
    fn take(&self, wait: &mut dyn Wait) -> Result<bool, StoreError> {
        self.call("take", Refill::Given, wait).map(|a| a.granted)
    }

    /// Deposits after a success.
    ///
    /// # Errors
    ///
    /// As `take`.
    fn deposit(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        self.call("deposit", Refill::Given, wait).map(|_| ())
    }

    /// The current level, and the bucket the state records.
    ///
    /// # Errors
    ///
    /// As `take`.
    fn level(&self, wait: &mut dyn Wait) -> Result<Level, StoreError> {
        self.call("show", Refill::Given, wait).map(|a| a.level)
    }

    /// Fills the bucket again, as `refill` says: what it found, its level
    /// at most the burst it records (else the one given), and the bucket it
    /// was filled as.
    ///
    /// # Errors
    ///
    /// As `level`.
    fn reset(
        &self,
        refill: Refill,
        wait: &mut dyn Wait,
    ) -> Result<(Found<Level>, Bucket), StoreError> {
        let answer = self.call("reset", refill, wait)?;
        let unexpected = || StoreError::Failed("unexpected reply from the budget script".into());
        let found = answer.found.ok_or_else(unexpected)?.map(|level| Level {
            micros: level.micros.min(level.made.unwrap_or(self.bucket).burst),
            ..level
        });
        Ok((found, answer.level.made.ok_or_else(unexpected)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_knows_the_largest_burst() {
        assert!(SCRIPT.contains(&format!("local limit = {}\n", MAX_BURST * UNIT)));
    }

    #[test]
    fn a_budget_reply_records_a_bucket_a_run_may_be_given_or_none() {
        let reply = |items: [&str; 5]| budget_reply(&items.map(String::from));
        let bucket = Bucket {
            burst: 3 * UNIT,
            ratio: UNIT / 10,
        };
        assert_eq!(
            reply(["1", "2000000", "0", "3000000", "100000"]),
            Some((
                BudgetReply {
                    granted: true,
                    level: Level {
                        micros: 2 * UNIT,
                        made: Some(bucket)
                    },
                    found: None,
                },
                false
            ))
        );
        assert_eq!(
            reply(["0", "5", "1", "", ""]),
            Some((
                BudgetReply {
                    granted: false,
                    level: Level {
                        micros: 5,
                        made: None
                    },
                    found: None,
                },
                true
            ))
        );
        for bad in [
            ["1", "x", "0", "", ""],
            ["1", "1", "0", "3000000", ""],
            ["1", "1", "0", "999999", "0"],
            ["1", "1", "0", "1000000000001", "0"],
            ["1", "1", "0", "1000000", "1000001"],
            ["1", "1000001", "0", "1000000", "0"],
        ] {
            assert_eq!(reply(bad), None, "{bad:?}");
        }
        assert_eq!(
            budget_reply(&["1".to_owned(), "1".to_owned(), "0".to_owned()]),
            None
        );
        // A reset adds what it found.
        let reset = |items: [&str; 9]| budget_reply(&items.map(String::from)).map(|(r, _)| r.found);
        let head = ["1", "3000000", "0", "3000000", "100000"];
        let with = |tail: [&'static str; 4]| {
            let mut items = [""; 9];
            items[..5].copy_from_slice(&head);
            items[5..].copy_from_slice(&tail);
            items
        };
        assert_eq!(
            reset(with(["state", "2000000", "3000000", "100000"])),
            Some(Some(Found::Held(Level {
                micros: 2 * UNIT,
                made: Some(bucket)
            })))
        );
        assert_eq!(
            reset(with(["state", "7", "", ""])),
            Some(Some(Found::Held(Level {
                micros: 7,
                made: None
            })))
        );
        assert_eq!(
            reset(with(["nothing", "", "", ""])),
            Some(Some(Found::Nothing))
        );
        assert_eq!(
            reset(with(["corrupt", "", "", ""])),
            Some(Some(Found::Corrupt))
        );
        for bad in [
            ["maybe", "", "", ""],
            ["nothing", "1", "", ""],
            ["corrupt", "", "3000000", "0"],
            ["state", "", "", ""],
            ["state", "4000000", "3000000", "100000"],
        ] {
            assert_eq!(reset(with(bad)), None, "{bad:?}");
        }
    }
}
