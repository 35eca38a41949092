//! `--lock-limit N` for a fleet: a counting semaphore in one Redis hash,
//! `backoff:slots:KEY`, changed only by one Lua script on the server's
//! clock. Each holder is three fields named by its random token `T`:
//! `e:T` (when its lease ends, in Unix milliseconds), `r:T` (its record)
//! and `f:T` (its fencing token); `fence` is the last fencing token handed
//! out (`fleet::lock::next_fence`, as for a plain lock) and `settle` when
//! the next holder may start. A run is let in while fewer than N leases
//! are live; leases that ran out are dropped as the script passes. The
//! leases are renewed, lost and let go as a plain lock's are
//! (`redis_lock::RedisLock` runs this script in place of its own), so that
//! each holder keeps every guarantee of a lease.
//!
//! The hash has no expiry, since it holds the fencing token. A hash with
//! no fencing token is a semaphore the store has no trace of (its first
//! use, or a loss of data): the run that takes a slot waits one
//! `--lock-ttl` first, and so do the runs that come during that wait.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::fleet::lock::{Holder, Lease, MAX_RECORD, MAX_SLOTS};
use crate::run::Wait;
use crate::store::redis::lock::{RedisLock, lease_prelude};
use crate::store::redis::{Lua, Server};
use crate::store::{Acquired, Alarm, Backend, LockBackend, LockState, StoreError};

/// The namespace of semaphore keys in Redis.
pub const REDIS_SLOTS_PREFIX: &str = "backoff:slots:";

/// The semaphore's script. KEYS[1]: the hash. ARGV: operation (acquire,
/// renew, release, list, reset), the caller's token, the lease's length
/// in milliseconds, the holder's record, `force` for a reset of held
/// slots, N, and the call's expiry. acquire, renew and release answer as
/// the lock script does ({status, record, expires, now, fence, settle,
/// note}); list and reset answer {status, now, then record, expires and
/// fence of each live holder}, status `list`, `held` (a reset refused),
/// `cleared`, `removed`, `corrupt` (list) or `repaired` (reset), with the
/// note of a corrupt hash as its only holder's record.
const SLOTS_SCRIPT: &str = concat!(
    lease_prelude!(),
    r"
local op, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local limit = tonumber(ARGV[6])
local function corrupt(note)
  if op == 'reset' then
    redis.call('DEL', KEYS[1])
    return {'repaired', n(now), note, '0', ''}
  elseif op == 'list' then
    return {'corrupt', n(now), note, '0', ''}
  end
  return redis.error_reply('CORRUPT the lock key ' .. note .. '; backoff lock reset repairs it')
end
if kind ~= 'hash' and kind ~= 'none' then
  return corrupt('holds a ' .. kind .. ', not a hash')
end
if redis.call('HLEN', KEYS[1]) > 3 * 1000 + 2 then
  return corrupt('holds more fields than 1000 slots have')
end
local all = redis.call('HGETALL', KEYS[1])
local fence, settle, holders, order = nil, 0, {}, {}
for i = 1, #all, 2 do
  local k, v = all[i], all[i + 1]
  if k == 'fence' then
    fence = digits(v, max_fence - 1)
    if fence == nil then return corrupt('has a fencing token out of bounds') end
  elseif k == 'settle' then
    settle = digits(v, now + longest)
    if settle == nil then return corrupt('has a settling time too far ahead') end
  else
    local p, t = string.sub(k, 1, 2), string.sub(k, 3)
    if (p ~= 'e:' and p ~= 'r:' and p ~= 'f:') or #t == 0 or #t > 64 then
      return corrupt('has a field out of shape')
    end
    if holders[t] == nil then
      holders[t] = {}
      table.insert(order, t)
    end
    holders[t][p] = v
  end
end
-- The live leases; those that ran out (or are out of shape) are dropped.
local live, count = {}, 0
for _, t in ipairs(order) do
  local e = digits(holders[t]['e:'], now + longest)
  if e and e > now then
    live[t] = e
    count = count + 1
  else
    redis.call('HDEL', KEYS[1], 'e:' .. t, 'r:' .. t, 'f:' .. t)
  end
end
local function record(t)
  local r = holders[t]['r:'] or ''
  if string.len(r) > 512 then r = '' end
  return r
end
local function listed(status)
  local out = {status, n(now)}
  for _, t in ipairs(order) do
    if live[t] then
      table.insert(out, record(t))
      table.insert(out, n(live[t]))
      table.insert(out, holders[t]['f:'] or '')
    end
  end
  return out
end
if op == 'acquire' then
  local ends = now + ttl
  if live[token] then
    -- This run's own lease, granted to a call whose answer was lost.
    redis.call('HSET', KEYS[1], 'e:' .. token, n(ends))
    return {'held', record(token), n(ends), n(now), holders[token]['f:'] or '',
      n(math.max(settle - now, 0)), 'pending'}
  end
  if count >= limit then
    -- Busy: the holder whose lease ends first is named.
    local first, soon = nil, nil
    for t, e in pairs(live) do
      if soon == nil or e < soon then first, soon = t, e end
    end
    return {'busy', record(first), n(soon), n(now), holders[first]['f:'] or '', '0', ''}
  end
  local wait, why = math.max(settle - now, 0), 'pending'
  if fence == nil then
    wait, why = math.max(wait, ttl), 'forgotten'
  end
  fence = math.max((fence or 0) + 1, now_us)
  redis.call('HSET', KEYS[1], 'e:' .. token, n(ends), 'r:' .. token, ARGV[4],
    'f:' .. token, n(fence), 'fence', n(fence), 'settle', n(now + wait))
  return {'held', ARGV[4], n(ends), n(now), n(fence), n(wait), why}
elseif op == 'renew' then
  if live[token] then
    redis.call('HSET', KEYS[1], 'e:' .. token, n(now + ttl))
    return {'renewed', '', n(now + ttl), n(now), '', '0', ''}
  end
  local how = 'removed'
  if kind == 'none' or fence == nil then
    how = 'forgotten'
  elseif holders[token] then
    how = 'expired'
  end
  return {'lost', '', '0', n(now), '', '0', how}
elseif op == 'release' then
  if holders[token] then
    redis.call('HDEL', KEYS[1], 'e:' .. token, 'r:' .. token, 'f:' .. token)
    return {'released', '', '0', n(now), '', '0', ''}
  end
  return {'not_owner', '', '0', n(now), '', '0', ''}
elseif op == 'list' then
  return listed('list')
elseif op == 'reset' then
  if count > 0 and ARGV[5] ~= 'force' then
    return listed('held')
  end
  local out = listed('cleared')
  local last = settle
  for t, e in pairs(live) do
    last = math.max(last, e)
    out[1] = 'removed'
  end
  for _, t in ipairs(order) do
    redis.call('HDEL', KEYS[1], 'e:' .. t, 'r:' .. t, 'f:' .. t)
  end
  if last > now then
    -- Their holders run on until their next renewal: the next run waits.
    redis.call('HSET', KEYS[1], 'settle', n(last))
  end
  return out
end
return redis.error_reply('ERR unknown operation')
"
);

/// A semaphore of leases in Redis.
pub struct RedisSlots {
    lock: RedisLock,
    server: Rc<Server>,
    key: String,
    limit: u32,
    timeout: Duration,
    script: Lua,
}

impl std::fmt::Debug for RedisSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lock = &self.lock;
        write!(f, "RedisSlots({lock:?}, {})", self.limit)
    }
}

/// What `list` and `reset` answered: the status, and each live holder
/// with the time its lease has left; or what was corrupt.
fn listed(answer: &[String]) -> Option<(String, Vec<LockState>)> {
    let [status, now, rest @ ..] = answer else {
        return None;
    };
    let now: u64 = now.parse().ok()?;
    if rest.len() % 3 != 0 || rest.len() / 3 > MAX_SLOTS as usize {
        return None;
    }
    let corrupt = matches!(status.as_str(), "corrupt" | "repaired");
    let slots = rest
        .chunks(3)
        .map(|h| {
            let [record, expires, fence] = h else {
                return None;
            };
            let fence = match fence.as_str() {
                "" => None,
                f => Some(f.parse::<u64>().ok()?),
            };
            let left = Duration::from_millis(expires.parse::<u64>().ok()?.saturating_sub(now));
            let holder = (record.len() <= MAX_RECORD)
                .then(|| Holder::parse(record.as_bytes()))
                .flatten()
                .map(|h| Holder { token: fence, ..h });
            Some(LockState {
                held: !corrupt,
                holder,
                lease_left: (!corrupt).then_some(left),
                corrupt: corrupt.then(|| crate::report::cut_quote(record, 128).into_owned()),
                slots: Vec::new(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((status.clone(), slots))
}

impl RedisSlots {
    /// The `limit` slots of `key` at `url`, leases of `lease`; each call
    /// waits at most `timeout`. Checks the URL only.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub fn new(
        url: &str,
        key: &str,
        limit: u32,
        lease: Lease,
        timeout: Duration,
    ) -> Result<RedisSlots, String> {
        let key = format!("{REDIS_SLOTS_PREFIX}{key}");
        let lock =
            RedisLock::leased(url, &key, lease, timeout)?.by(SLOTS_SCRIPT, vec![limit.to_string()]);
        Ok(RedisSlots {
            lock,
            server: Server::shared(url)?,
            key,
            limit,
            timeout,
            script: Lua::decision(SLOTS_SCRIPT),
        })
    }

    /// Lists the live holders (`op` list), or clears them (`op` reset).
    fn each(&self, op: &str, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let args = [op, "", "0", "", if force { "force" } else { "" }]
            .iter()
            .map(|a| (*a).to_owned())
            .chain([self.limit.to_string()])
            .collect();
        let answer = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        let (status, slots) = listed(&answer).ok_or_else(|| {
            StoreError::Failed("unexpected reply from the semaphore script".into())
        })?;
        if status == "held" {
            return Err(StoreError::Failed(format!(
                "{} has {} held by live leases: --force removes them anyway (their holders end at their next renewal)",
                self.key,
                crate::report::text::plural(slots.len() as u64, "slot")
            )));
        }
        let corrupt = slots.iter().find_map(|s| s.corrupt.clone());
        Ok(LockState {
            held: status == "removed" || (status == "list" && !slots.is_empty()),
            holder: None,
            lease_left: None,
            corrupt,
            slots,
        })
    }
}

/// Its leases are a lock's, of the same key: so is what tells of it.
impl Backend for RedisSlots {
    fn describe(&self) -> String {
        self.lock.describe()
    }

    fn server(&self) -> Option<String> {
        self.lock.server()
    }
}

impl LockBackend for RedisSlots {
    fn acquire(
        &self,
        me: &Holder,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Acquired, StoreError> {
        self.lock.acquire(me, patience, by, wait, waiting)
    }

    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Result<(), StoreError> {
        self.lock.release(wait, by)
    }

    fn lost(&self) -> Option<String> {
        self.lock.lost()
    }

    fn alarm(&self, alarm: Alarm) {
        self.lock.alarm(alarm);
    }

    fn show(&self, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        self.each("list", false, wait)
    }

    fn reset(&self, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        self.each("reset", force, wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_read_within_bounds() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let record = Holder {
            pid: 7,
            since_ms: 1,
            token: None,
            run_id: "r".into(),
            host: "h".into(),
        }
        .record();
        let (status, slots) = listed(&s(&[
            "list",
            "1000",
            record.trim_end(),
            "3000",
            "12",
            "junk",
            "1500",
            "",
        ]))
        .unwrap();
        assert_eq!(status, "list");
        assert_eq!(slots.len(), 2);
        assert_eq!(slots[0].holder.as_ref().unwrap().token, Some(12));
        assert_eq!(slots[0].lease_left, Some(Duration::from_secs(2)));
        assert_eq!(slots[1].holder, None);
        let (_, corrupt) = listed(&s(&["corrupt", "5", "holds a list", "0", ""])).unwrap();
        assert_eq!(corrupt[0].corrupt.as_deref(), Some("holds a list"));
        assert!(listed(&s(&["list", "5", "a", "b"])).is_none());
        assert!(listed(&s(&["list", "x"])).is_none());
        assert!(listed(&s(&["list", "5", "", "9", "-1"])).is_none());
    }
}
