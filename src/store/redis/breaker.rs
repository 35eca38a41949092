//! Circuit breakers kept in Redis: the breaker's script, run atomically on
//! the circuit's key on the server's clock, and what it answers.

use std::rc::Rc;
use std::time::Duration;

use crate::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::{Backend as StoreBackend, BreakerBackend, FailMode, Found, StoreError};

use crate::store::redis::{Lua, REDIS_IDLE_TTL, Server};

/// The namespace of breaker keys in Redis.
pub const REDIS_BREAKER_PREFIX: &str = "backoff:breaker:";

/// The breaker's decisions, run atomically by Redis with the rules of
/// `breaker` (which its tests pin down) on the server's clock. KEYS[1] is
/// the circuit, `v1 FAILURES OPENED UNTIL PROBE` (Unix milliseconds);
/// ARGV: operation (admit, record, show, reset), the failures that open
/// it, the cooldown in milliseconds, the expiry in seconds, `repair` or
/// `keep` for a corrupt state (as the budget's), and for record how the
/// run ended (`succeeded`, `gave_up`, `interrupted`) and the probe's claim (or
/// empty). Returns {decision, since, until, then the circuit before (admit,
/// and reset, as it was stored) or after (record, show): failures, opened,
/// until, probe; the server's time, repaired}, every number as a string. A
/// reset repairs any state (a value of the wrong type included), writes
/// nothing where there is none, and its decision is what it found:
/// `nothing`, `state` or `corrupt`.
const BREAKER_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local threshold = tonumber(ARGV[2])
local cooldown = tonumber(ARGV[3])
local f, o, u, p = 0, 0, 0, 0
local repaired = 0
local latest = 253402300799999
local function n(x) return string.format('%.0f', x) end
-- The circuit a stored value holds, or nil for one no store may hold: no
-- time past year 9999, no count past 32 bits.
local function circuit(raw)
  local a, b, c, d = string.match(raw, '^v1 (%d+) (%d+) (%d+) (%d+)$')
  if a == nil then return nil end
  a, b, c, d = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
  if a > 4294967295 or b > latest or c > latest or d > latest then return nil end
  return a, b, c, d
end
local found = 'state'
if op == 'reset' then
  local kind = redis.call('TYPE', KEYS[1])['ok']
  if kind == 'none' then
    return {'nothing', '0', '0', '0', '0', '0', '0', n(now), '0'}
  end
  local a, b, c, d = nil, nil, nil, nil
  if kind == 'string' then a, b, c, d = circuit(redis.call('GET', KEYS[1])) end
  if a == nil then found = 'corrupt' else f, o, u, p = a, b, c, d end
else
  local raw = redis.call('GET', KEYS[1])
  if raw then
    local a, b, c, d = circuit(raw)
    if a ~= nil then
      f, o, u, p = a, b, c, d
    elseif op == 'show' or ARGV[5] ~= 'repair' then
      return redis.error_reply('corrupt breaker state at ' .. KEYS[1])
    else
      repaired = 1
    end
  end
end
local stored = {n(f), n(o), n(u), n(p)}
local stored_probe = p
-- A time further ahead than one cooldown (a clock stepped back) comes back
-- to one cooldown from now, an opening in the future to now; show tells
-- the state as it is stored.
if op ~= 'show' then
  local reach = math.min(now + cooldown, latest)
  o = math.min(o, math.min(math.max(now, 1), latest))
  u = math.min(u, reach)
  p = math.min(p, reach)
end
local before = {n(f), n(o), n(u), n(p)}
local decision, since, untl = 'none', 0, 0
if op == 'admit' then
  if o == 0 then
    decision = 'run'
  elseif now < u then
    decision, since, untl = 'skip', o, u
  elseif now < p then
    decision, since, untl = 'skip_probing', o, p
  else
    p = math.min(math.max(now + cooldown, 1), latest)
    decision, since, untl = 'probe', o, p
  end
elseif op == 'record' then
  local ended = ARGV[6]
  local claim = tonumber(ARGV[7])
  -- A probe whose claim is no longer the stored one counts as any run.
  if claim ~= nil and claim ~= stored_probe then claim = nil end
  if ended == 'succeeded' then
    f, o, u, p = 0, 0, 0, 0
  elseif ended == 'gave_up' then
    f = math.min(f + 1, 4294967295)
    if claim ~= nil or (o == 0 and f >= threshold) then
      o, u, p = math.min(math.max(now, 1), latest), math.min(math.max(now + cooldown, 1), latest), 0
    end
  elseif claim ~= nil then
    p = 0
  end
elseif op == 'reset' then
  f, o, u, p = 0, 0, 0, 0
end
local after = {n(f), n(o), n(u), n(p)}
local changed = repaired == 1 or op == 'reset'
for i = 1, 4 do
  if stored[i] ~= after[i] then changed = true end
end
if changed and op ~= 'show' then
  redis.call('SET', KEYS[1], 'v1 ' .. table.concat(after, ' '), 'EX', tonumber(ARGV[4]))
end
local shown = after
if op == 'admit' then shown = before end
if op == 'reset' then shown, decision = stored, found end
return {decision, n(since), n(untl), shown[1], shown[2], shown[3], shown[4], n(now), tostring(repaired)}
";

/// A circuit breaker kept in Redis.
pub struct RedisBreaker {
    server: Rc<Server>,
    timeout: Duration,
    key: String,
    breaker: Breaker,
    /// A corrupt state becomes a closed circuit (`--budget-store-fail open`).
    repair: bool,
    script: Lua,
    /// Where a repaired state is told.
    warnings: Warnings,
}

impl std::fmt::Debug for RedisBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBreaker")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// What the breaker script answered.
struct BreakerReply {
    decision: String,
    since_ms: u64,
    until_ms: u64,
    circuit: Circuit,
    now_ms: u64,
}

/// Reads the breaker script's reply, and whether it repaired a corrupt
/// state; `None` for anything that is not a reply the script makes (a
/// circuit no store may hold included).
fn breaker_reply(reply: &[String]) -> Option<(BreakerReply, bool)> {
    let number = |s: &String| s.parse::<u64>().ok();
    let [
        decision,
        since,
        until,
        failures,
        opened,
        reopens,
        probe,
        now,
        repaired,
    ] = reply
    else {
        return None;
    };
    let circuit = Circuit {
        failures: u32::try_from(number(failures)?).ok()?,
        opened_ms: number(opened)?,
        until_ms: number(reopens)?,
        probe_until_ms: number(probe)?,
    };
    let reply = BreakerReply {
        decision: decision.clone(),
        since_ms: number(since)?,
        until_ms: number(until)?,
        circuit: circuit.checked()?,
        now_ms: number(now)?,
    };
    Some((reply, repaired == "1"))
}

impl StoreBackend for RedisBreaker {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
    }
}

impl RedisBreaker {
    /// A breaker `key` at `url`, as `RedisBudget::new` opens a budget.
    ///
    /// # Errors
    ///
    /// As `RedisBudget::new`.
    pub fn new(
        url: &str,
        key: &str,
        breaker: Breaker,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<RedisBreaker, String> {
        Ok(RedisBreaker {
            server: Server::shared(url)?,
            timeout,
            key: format!("{REDIS_BREAKER_PREFIX}{key}"),
            breaker,
            repair: fail == FailMode::Open,
            script: Lua::decision(BREAKER_SCRIPT),
            warnings,
        })
    }

    fn call(
        &self,
        op: &str,
        end: Option<RunEnd>,
        probe: Option<u64>,
        wait: &mut dyn Wait,
    ) -> Result<BreakerReply, StoreError> {
        // An idle key lasts the idle time past its reopening.
        let ttl = REDIS_IDLE_TTL.as_secs() + self.breaker.cooldown_ms.div_ceil(1000);
        let args = vec![
            op.to_owned(),
            self.breaker.failures.to_string(),
            self.breaker.cooldown_ms.to_string(),
            ttl.to_string(),
            if self.repair { "repair" } else { "keep" }.to_owned(),
            match end {
                Some(RunEnd::Succeeded) => "succeeded",
                Some(RunEnd::GaveUp) => "gave_up",
                Some(RunEnd::Interrupted) => "interrupted",
                None => "",
            }
            .to_owned(),
            probe.map(|p| p.to_string()).unwrap_or_default(),
        ];
        let reply = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        let (reply, repaired) = breaker_reply(&reply).ok_or_else(|| {
            StoreError::Failed("unexpected reply from the breaker script".to_owned())
        })?;
        if repaired {
            self.warnings.warn(&format!(
                "circuit breaker store {}: corrupt breaker state at {}; starting closed",
                self.server.url(),
                self.key
            ));
        }
        Ok(reply)
    }
}

impl BreakerBackend for RedisBreaker {
    /// Decides whether this run may start the command: the answer, the
    /// circuit as it was before, and the server's time of the decision.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached in time, or a signal ends the wait.
    fn admit(&self, wait: &mut dyn Wait) -> Result<(Admission, Circuit, u64), StoreError> {
        let r = self.call("admit", None, None, wait)?;
        let admission = match r.decision.as_str() {
            "run" => Admission::Run,
            "probe" => Admission::Probe {
                until_ms: r.until_ms,
            },
            "skip" | "skip_probing" => Admission::Skip {
                since_ms: r.since_ms,
                until_ms: r.until_ms,
                probing: r.decision == "skip_probing",
            },
            _ => {
                return Err(StoreError::Failed(
                    "unexpected reply from the breaker script".to_owned(),
                ));
            }
        };
        Ok((admission, r.circuit, r.now_ms))
    }

    /// Records how an admitted run ended: the circuit after, and the time.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn record(
        &self,
        end: RunEnd,
        probe: Option<u64>,
        wait: &mut dyn Wait,
    ) -> Result<(Circuit, u64), StoreError> {
        self.call("record", Some(end), probe, wait)
            .map(|r| (r.circuit, r.now_ms))
    }

    /// The circuit and the server's time now.
    ///
    /// # Errors
    ///
    /// As `admit`, and when the state is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Circuit, u64), StoreError> {
        match self.call("show", None, None, wait) {
            Ok(r) => Ok((r.circuit, r.now_ms)),
            Err(StoreError::Failed(why)) if why.contains("corrupt breaker state") => {
                let key = self.key.trim_start_matches(REDIS_BREAKER_PREFIX);
                Err(StoreError::Failed(format!(
                    "{why}; 'backoff breaker reset {key}' with the same --budget-store repairs it"
                )))
            }
            Err(e) => Err(e),
        }
    }

    /// Closes the circuit, whatever the key held: what it found, as it was
    /// stored, and the server's time.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Circuit>, u64), StoreError> {
        let r = self.call("reset", None, None, wait)?;
        let found = match r.decision.as_str() {
            "nothing" => Found::Nothing,
            "state" => Found::Held(r.circuit),
            "corrupt" => Found::Corrupt,
            _ => {
                return Err(StoreError::Failed(
                    "unexpected reply from the breaker script".to_owned(),
                ));
            }
        };
        Ok((found, r.now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::breaker::LATEST_MS;
    use proptest::prelude::*;

    #[test]
    fn the_script_knows_the_latest_time_a_circuit_may_hold() {
        assert!(BREAKER_SCRIPT.contains(&format!("local latest = {LATEST_MS}\n")));
    }

    proptest::proptest! {
        #[test]
        fn any_reply_is_a_circuit_a_store_may_hold_or_unexpected(
            reply in proptest::collection::vec(
                proptest::prop_oneof![
                    "[0-9]{1,25}",
                    any::<u64>().prop_map(|n| n.to_string()),
                    any::<String>(),
                ],
                0..11,
            ),
        ) {
            if let Some((r, _)) = breaker_reply(&reply) {
                proptest::prop_assert_eq!(r.circuit.checked(), Some(r.circuit));
                proptest::prop_assert_eq!(reply.len(), 9);
            }
        }
    }

    #[test]
    fn a_reply_with_a_time_past_year_9999_is_unexpected() {
        let reply = |until: u64| {
            [
                "skip",
                "1",
                "2",
                "3",
                "1",
                &until.to_string(),
                "0",
                "5",
                "0",
            ]
            .map(String::from)
        };
        assert!(breaker_reply(&reply(LATEST_MS)).is_some());
        assert!(breaker_reply(&reply(LATEST_MS + 1)).is_none());
    }
}
