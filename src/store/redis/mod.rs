//! Retry budgets, circuit breakers and adaptive throttles kept in Redis (or
//! Valkey), shared by a fleet of hosts: the same token bucket, breaker and
//! throttle rules as the file store, each decision one Lua script that the
//! server runs atomically on one key, never a read-modify-write from the
//! client. The breaker's and the throttle's times are the server's clock,
//! so the hosts' clocks need not agree. The password of the store's URL
//! never shows in a message.
//!
//! The stores of one run that name the same URL make their calls on one
//! connection, made at the first call. A script is called by its SHA-1
//! (EVALSHA); the server is sent its text (SCRIPT LOAD) only when it does
//! not know it yet, once per script while the server keeps its scripts.
//!
//! The calls to the store are made by one thread per server, started at the
//! first call and kept for the next ones (a thread started for each call
//! cost more than the call itself on a busy machine), and backoff waits for
//! each answer, for a terminating signal and for the timeout in one wait: a
//! store that never answers (a frozen server, a slow name lookup) costs at
//! most the timeout, and a signal ends the wait at once. A call abandoned
//! that way ends by itself (every read and write of its connection ends by
//! the same deadline, however slowly a server sends), and its thread and its
//! connection are never used again. The connection is backoff's own (`wire`): it reads at
//! most 64 KiB of a reply, and a message quotes at most 256 bytes of what
//! a server says.
//!
//! A decision that reaches the server after backoff stopped waiting for it
//! (a server frozen, then thawed, reads what was sent meanwhile) must change
//! nothing: each call carries its expiry on the server's clock, and every
//! script refuses a call past it. A connection reads the server's clock once
//! (and again after a while), so the expiry is the local deadline moved onto
//! the server's clock, a little early so that an answer still has time to
//! come back.
//!
//! In a Redis Cluster, a call follows the redirections of a slot being moved
//! within its time: ASK (the key has gone to the node that imports the slot:
//! ASKING there, then the script) and MOVED (the slot is served elsewhere:
//! the script there, and a fresh slot map for the next call). Neither
//! redirection ran the script, so following them never applies a decision
//! twice; nothing else is tried again.

pub(super) mod lock;
mod resp;
mod wire;

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::duration::human;
use crate::fleet::breaker::{Admission, Breaker, Circuit, LATEST_MS, RunEnd};
use crate::fleet::bucket::{Bucket, MAX_BURST, UNIT};
use crate::fleet::throttle::{
    Counts, Decision, MAX_COUNT, MAX_K_MILLI, MAX_WINDOW_MS, MIN_WINDOW_MS, SLOTS, Slot, Throttle,
    Window,
};
use crate::report::{Warnings, cut_quote};
use crate::run::{Wait, Waited};
use crate::store::redis::wire::Wire;
use crate::store::secret::{redact, scrub};
use crate::store::{
    Backend as StoreBackend, BreakerBackend, BudgetBackend, FailMode, Found, Level, Refill,
    StoreError, ThrottleBackend, deadline_after,
};

/// The most of what a server says (an error, an unexpected reply) that a
/// message quotes, in bytes as the line shows them.
const QUOTED: usize = 256;

/// The namespace of budget keys in Redis.
pub const REDIS_PREFIX: &str = "backoff:budget:";

/// The namespace of breaker keys in Redis.
pub const REDIS_BREAKER_PREFIX: &str = "backoff:breaker:";

/// An idle budget key expires after this long, so that abandoned keys do
/// not pile up; every update starts the time again.
pub const REDIS_IDLE_TTL: Duration = Duration::from_hours(7 * 24);

/// The first lines of every decision's script: its last argument is the
/// call's expiry, on the server's clock in Unix milliseconds, and a call
/// that reaches the server after it changes nothing.
const EXPIRY: &str = r"
local clock = redis.call('TIME')
if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > tonumber(ARGV[#ARGV]) then
  return redis.error_reply('EXPIRED the decision reached the store after its deadline')
end
";

/// The server's clock, read on the node of the key (KEYS[1]): {seconds,
/// microseconds}.
const CLOCK: &str = "local t = redis.call('TIME') return {t[1], t[2]}";

/// How long what a connection read of the server's clock is used, before it
/// is read again: clocks kept by NTP drift apart by a few milliseconds at
/// most in that time.
const CLOCK_AGE: Duration = Duration::from_mins(1);

/// How many redirections of a cluster a call follows (a slot moved while
/// it is moved again), within its time.
const REDIRECTIONS: usize = 5;

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

/// What connects to the store: one server, or a Redis Cluster.
#[derive(Clone)]
enum Backend {
    /// A server (`redis://`, `rediss://`, `redis+unix://`, `unix://`).
    Single(Box<redis::ConnectionInfo>),
    /// A cluster (`redis+cluster://`, `rediss+cluster://`), by the URLs of
    /// its nodes: each call goes to the node that serves its key's slot.
    Cluster(Vec<String>),
}

/// A connection to the store, over `Wire`s.
enum Link {
    Single(Wire),
    Cluster(Box<redis::cluster::ClusterConnection<Wire>>),
}

impl Link {
    /// Every read and write of the connection, until this is called again,
    /// ends within `limit` from now.
    fn set_timeouts(&mut self, limit: Duration) -> redis::RedisResult<()> {
        use redis::cluster::Connect as _;
        match self {
            Link::Single(c) => c
                .set_read_timeout(Some(limit))
                .and_then(|()| c.set_write_timeout(Some(limit))),
            Link::Cluster(c) => c
                .set_read_timeout(Some(limit))
                .and_then(|()| c.set_write_timeout(Some(limit))),
        }
    }

    fn as_connection(&mut self) -> &mut dyn redis::ConnectionLike {
        match self {
            Link::Single(c) => c,
            Link::Cluster(c) => c.as_mut(),
        }
    }

    /// Runs `eval` on the cluster's node at `node` (`host:port`), after
    /// ASKING there when `asking`.
    fn redirected(
        &mut self,
        node: &str,
        asking: bool,
        eval: &redis::Cmd,
    ) -> redis::RedisResult<Vec<String>> {
        let not_a_cluster = || {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "a redirection from a server that is not a cluster",
            ))
        };
        let Link::Cluster(c) = self else {
            return Err(not_a_cluster());
        };
        let (host, port) = node
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
            .ok_or_else(not_a_cluster)?;
        let route = || {
            redis::cluster_routing::RoutingInfo::SingleNode(
                redis::cluster_routing::SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port,
                },
            )
        };
        if asking {
            c.route_command(&redis::cmd("ASKING"), route())?;
        }
        redis::from_redis_value(c.route_command(eval, route())?).map_err(redis::RedisError::from)
    }
}

/// A script of the store's, and its text, which a redirected call sends
/// whole (the node it goes to may not have it yet).
#[derive(Clone)]
pub(super) struct Lua {
    script: redis::Script,
    code: Arc<str>,
}

impl Lua {
    fn new(code: String) -> Lua {
        Lua {
            script: redis::Script::new(&code),
            code: code.into(),
        }
    }

    /// A decision's script: `body`, refusing a call past its expiry.
    pub(super) fn decision(body: &str) -> Lua {
        Lua::new(format!("{EXPIRY}{body}"))
    }
}

/// What a connection read of the server's clock: its time, in Unix
/// milliseconds, and a local instant by which it had been read. The
/// server's time at a later instant `t` is at least `server_ms + (t -
/// read_by)`.
#[derive(Clone, Copy)]
struct Clock {
    server_ms: u64,
    read_by: Instant,
}

impl Clock {
    /// The clock as `CLOCK` answered it by `read_by`.
    fn read(reply: &[String], read_by: Instant) -> Option<Clock> {
        let [seconds, micros] = reply else {
            return None;
        };
        let seconds: u64 = seconds.parse().ok()?;
        let micros: u64 = micros.parse().ok()?;
        Some(Clock {
            server_ms: seconds.checked_mul(1000)?.checked_add(micros / 1000)?,
            read_by,
        })
    }

    /// A time on the server's clock that comes at the local instant
    /// `cutoff` or before it: a script that runs by it runs by `cutoff`
    /// (the clock may have been read late, never early).
    fn at(self, cutoff: Instant) -> u64 {
        let since = cutoff.saturating_duration_since(self.read_by).as_millis();
        self.server_ms
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }
}

/// The latest instant at which a call ending at `deadline`, of a store
/// whose timeout is `timeout`, may still be applied: a tenth of the timeout
/// before the deadline, the time its answer has to come back.
fn cutoff(deadline: Instant, timeout: Duration) -> Instant {
    deadline.checked_sub(timeout / 10).unwrap_or(deadline)
}

/// A cluster's client for its `nodes`, each connection made within
/// `limit`, and none tried again (the fail mode decides).
fn cluster_client(
    nodes: &[String],
    limit: Duration,
) -> redis::RedisResult<redis::cluster::ClusterClient> {
    redis::cluster::ClusterClient::builder(nodes.iter().map(String::as_str))
        .retries(0)
        .connection_timeout(limit)
        .build()
}

impl Backend {
    /// Connects within `limit`.
    fn connect(&self, limit: Duration) -> redis::RedisResult<Link> {
        match self {
            Backend::Single(info) => Wire::connect(info, Some(limit)).map(Link::Single),
            // The cluster's connection over `Wire`s (`get_generic_connection`
            // is how the redis crate makes one over a connection of the
            // caller's).
            Backend::Cluster(nodes) => cluster_client(nodes, limit)?
                .get_generic_connection::<Wire>()
                .map(|c| Link::Cluster(Box::new(c))),
        }
    }
}

/// One call to the store, made on a thread of its own: a script on one
/// key, with its arguments.
struct Call {
    backend: Backend,
    connection: Option<Connection>,
    script: Lua,
    clock: Lua,
    key: String,
    args: Vec<String>,
    deadline: Instant,
    /// The last moment the script may be applied (`cutoff`).
    cutoff: Instant,
    /// A cluster redirected the call with MOVED: its slot map is stale.
    moved: bool,
    /// What a call that ran out of time says (`timed out after 2.00s`),
    /// the same whether the thread or backoff gave up first.
    timed_out: String,
}

/// A connection to the store, and what it read of the server's clock.
struct Connection {
    link: Link,
    clock: Option<Clock>,
}

/// What a call answered (the script's reply, every item as a string), or
/// why not and whether the script may have been applied all the same (it
/// was sent, and no answer came back), and the connection to use next
/// time, if it is still sound.
type Answer = (Result<Vec<String>, (String, bool)>, Option<Connection>);

impl Call {
    /// Connects if need be and runs the script, every step bounded by the
    /// time left before the deadline.
    fn run(mut self) -> Answer {
        let answer = self.invoke();
        let connection = if answer.is_ok() && !self.moved {
            self.connection
        } else {
            // Start afresh next time: the connection may be broken, or its
            // slot map stale.
            None
        };
        (answer, connection)
    }

    /// Connects, reads the clock and runs the script. Nothing before the
    /// script is ever applied; the script itself may have been when no
    /// answer came back (a reply lost, a connection dropped, the time up),
    /// unlike when the server answered with an error: the error says which.
    fn invoke(&mut self) -> Result<Vec<String>, (String, bool)> {
        let not_sent = |why: String| (why, false);
        let timed_out = self.timed_out.clone();
        let why = |e: &redis::RedisError| match (e.code(), e.detail()) {
            _ if e.is_timeout() => timed_out.clone(),
            // The server's own words, as it said them.
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => e.to_string(),
        };
        let deadline = self.deadline;
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(not_sent(self.timed_out.clone()))
            } else {
                Ok(left)
            }
        };
        let mut connection = match self.connection.take() {
            Some(c) => c,
            None => Connection {
                link: self
                    .backend
                    .connect(left()?)
                    .map_err(|e| not_sent(why(&e)))?,
                clock: None,
            },
        };
        connection
            .link
            .set_timeouts(left()?)
            .map_err(|e| not_sent(why(&e)))?;
        let clock = match connection.clock {
            Some(c) if c.read_by.elapsed() < CLOCK_AGE => c,
            _ => {
                let clock = self.clock.clone();
                let reply = self
                    .evaluate(&mut connection.link, &clock, &[])
                    .map_err(|e| not_sent(why(&e)))?;
                Clock::read(&reply, Instant::now())
                    .ok_or_else(|| not_sent("unexpected reply to TIME".to_owned()))?
            }
        };
        connection.clock = Some(clock);
        if self.cutoff <= Instant::now() {
            return Err(not_sent(self.timed_out.clone()));
        }
        let mut args = self.args.clone();
        args.push(clock.at(self.cutoff).to_string());
        let script = self.script.clone();
        // An error the server answered (a script's refusal) applied
        // nothing; any other may have come after the script ran.
        let answer = self
            .evaluate(&mut connection.link, &script, &args)
            .map_err(|e| (why(&e), e.code().is_none()))?;
        self.connection = Some(connection);
        Ok(answer)
    }

    /// Runs `lua` on the call's key with `args`, following a cluster's
    /// redirections (ASK, MOVED), which never ran it; any other error is
    /// the answer, since a call that failed otherwise may have been applied.
    fn evaluate(
        &mut self,
        link: &mut Link,
        lua: &Lua,
        args: &[String],
    ) -> redis::RedisResult<Vec<String>> {
        let mut invocation = lua.script.key(&self.key);
        for arg in args {
            invocation.arg(arg);
        }
        let mut answer = invocation.invoke(link.as_connection());
        for _ in 0..REDIRECTIONS {
            let asking = match answer.as_ref().map_err(redis::RedisError::kind) {
                Err(redis::ErrorKind::Server(redis::ServerErrorKind::Ask)) => true,
                Err(redis::ErrorKind::Server(redis::ServerErrorKind::Moved)) => false,
                _ => return answer,
            };
            let Some((node, _slot)) = answer
                .as_ref()
                .err()
                .and_then(redis::RedisError::redirect_node)
            else {
                return answer;
            };
            let node = node.to_owned();
            self.moved |= !asking;
            let eval = redis::cmd("EVAL")
                .arg(&*lua.code)
                .arg(1)
                .arg(&self.key)
                .arg(args)
                .to_owned();
            answer = link.redirected(&node, asking, &eval);
        }
        answer
    }
}

/// A connection to the store, and the calls made on it: what the budget,
/// breaker and throttle of a run that name the same URL share (`shared`).
pub(super) struct Server {
    url: String,
    backend: Backend,
    connection: RefCell<Option<Connection>>,
    clock: Lua,
    /// The thread that makes the calls, started at the first and kept for
    /// the next; one that a call was given up on is let go with it.
    worker: RefCell<Option<Worker>>,
}

/// A thread that makes the calls to the store, one at a time: a call goes
/// in through `calls`, its answer comes back through `answers`, and a byte
/// in `ready` wakes the wait for it. Starting a thread for each call cost
/// more than the call itself on a busy machine.
struct Worker {
    calls: mpsc::Sender<Call>,
    answers: mpsc::Receiver<Answer>,
    ready: std::io::PipeReader,
}

impl Worker {
    /// Starts the thread.
    fn start() -> std::io::Result<Worker> {
        let (calls, incoming) = mpsc::channel::<Call>();
        let (answer, answers) = mpsc::channel::<Answer>();
        let (ready, mut done) = std::io::pipe()?;
        crate::sys::fd::set_nonblocking(&ready)?;
        std::thread::Builder::new()
            .name("store calls".into())
            .spawn(move || {
                // Ends when the server lets it go (its sender dropped),
                // after the call under way, if any.
                for call in incoming {
                    if answer.send(call.run()).is_err() {
                        return;
                    }
                    if std::io::Write::write_all(&mut done, b"1").is_err() {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            calls,
            answers,
            ready,
        })
    }
}

thread_local! {
    /// The servers in use, by URL: every store of a run that names the same
    /// URL makes its calls on one connection. A server is forgotten when
    /// the last store using it goes.
    static SERVERS: RefCell<Vec<(String, Weak<Server>)>> = const { RefCell::new(Vec::new()) };
}

/// The nodes of a `redis+cluster://[user:password@]host:port,host:port`
/// URL, each as a `redis://` (or `rediss://`) URL with the user info.
fn cluster_nodes(url: &str) -> Result<Vec<String>, String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("redis+cluster://") {
        ("redis", rest)
    } else if let Some(rest) = url.strip_prefix("rediss+cluster://") {
        ("rediss", rest)
    } else {
        return Err("not a cluster URL".into());
    };
    // One user info, before the first host: the same for every node.
    if rest.rsplit_once('@').is_some_and(|(u, _)| u.contains(',')) {
        return Err("give the user and password once, before the first host (redis+cluster://user:password@host:port,host:port; a ',' in a password is written %2C)".into());
    }
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), rest),
    };
    let (hosts, path) = hosts.split_once('/').unwrap_or((hosts, ""));
    if !matches!(path, "" | "0") {
        return Err("a Redis Cluster has only database 0".into());
    }
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{userinfo}{h}"))
        .collect();
    if nodes.is_empty() {
        return Err("expected host:port[,host:port...] after the scheme".into());
    }
    Ok(nodes)
}

impl Server {
    /// The server at `url`, the one already in use if there is one (see
    /// `SERVERS`). Checks the URL only: nothing connects until a call is
    /// made.
    pub(super) fn shared(url: &str) -> Result<Rc<Server>, String> {
        SERVERS.with_borrow_mut(|servers| {
            servers.retain(|(_, s)| s.strong_count() > 0);
            let known = servers
                .iter()
                .find(|(u, _)| u == url)
                .and_then(|(_, s)| s.upgrade());
            if let Some(server) = known {
                return Ok(server);
            }
            let server = Rc::new(Server::open(url)?);
            servers.push((url.to_owned(), Rc::downgrade(&server)));
            Ok(server)
        })
    }

    /// The server at `url`, of its own. Checks the URL only.
    pub(super) fn open(url: &str) -> Result<Server, String> {
        let cluster = url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://");
        let single = ["redis://", "rediss://", "redis+unix://", "unix://"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
        if !cluster && !single {
            return Err(
                "expected a redis://[user:password@]host[:port][/db] URL (rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, redis+cluster://host:port,host:port for a cluster)"
                    .into(),
            );
        }
        let opened = if cluster {
            // The nodes are checked now; a client is made for each
            // connection, with the time its call has left.
            cluster_nodes(url).and_then(|nodes| {
                cluster_client(&nodes, Duration::from_secs(1))
                    .map(|_| Backend::Cluster(nodes))
                    .map_err(|e| e.to_string())
            })
        } else {
            single_url_checked(url).and_then(|()| {
                redis::Client::open(url)
                    .map(|client| Backend::Single(Box::new(client.get_connection_info().clone())))
                    .map_err(|e| plain_error(&e))
            })
        };
        let backend = opened.map_err(|e| {
            let why = scrub(&e, url);
            let userinfo = url.split_once("://").and_then(|(_, r)| r.rsplit_once('@'));
            if userinfo.is_some_and(|(u, _)| u.contains('/')) {
                format!("{why} (a '/' in a password is written %2F)")
            } else {
                why
            }
        })?;
        Ok(Server {
            url: url.to_owned(),
            backend,
            connection: RefCell::new(None),
            clock: Lua::new(CLOCK.to_owned()),
            worker: RefCell::new(None),
        })
    }

    /// Runs `script` on `key` with `args` on the server's thread and
    /// waits, through `wait`, for its answer, at most `timeout`. A call
    /// given up on takes its connection and its thread with it: the next
    /// call makes new ones.
    pub(super) fn call(
        &self,
        script: &Lua,
        key: &str,
        args: Vec<String>,
        timeout: Duration,
        wait: &mut dyn Wait,
    ) -> Result<Vec<String>, StoreError> {
        self.call_telling(script, key, args, timeout, wait)
            .map_err(|(e, _)| e)
    }

    /// `call`, and for a call that failed whether its script may have been
    /// applied all the same: it was sent and no answer came back in time,
    /// or a signal ended the wait for it.
    pub(super) fn call_telling(
        &self,
        script: &Lua,
        key: &str,
        args: Vec<String>,
        timeout: Duration,
        wait: &mut dyn Wait,
    ) -> Result<Vec<String>, (StoreError, bool)> {
        // The secrets go first, so that no cut leaves a part of one.
        let failed =
            |e: String| StoreError::Failed(cut_quote(&scrub(&e, &self.url), QUOTED).into_owned());
        let deadline = deadline_after(timeout);
        let call = Call {
            backend: self.backend.clone(),
            connection: self.connection.take(),
            script: script.clone(),
            clock: self.clock.clone(),
            key: key.to_owned(),
            args,
            deadline,
            cutoff: cutoff(deadline, timeout),
            moved: false,
            timed_out: format!("timed out after {}", human(timeout)),
        };
        let call_timed_out = call.timed_out.clone();
        let worker = match self.worker.take() {
            Some(w) => w,
            None => Worker::start()
                .map_err(|e| (failed(format!("cannot start a thread: {e}")), false))?,
        };
        if worker.calls.send(call).is_err() {
            return Err((failed("the store call failed".into()), false));
        }
        let waited = wait.wait_ready(Some(&worker.ready), deadline);
        if let Waited::Signal(sig) = waited {
            return Err((StoreError::Interrupted(sig), true));
        }
        match worker.answers.try_recv() {
            Ok((answer, connection)) => {
                let mut byte = [0u8; 1];
                // The byte follows the answer: when it is not there yet
                // (the wait ended between the two), the thread is not kept,
                // so that no byte of this call wakes the next one.
                if std::io::Read::read(&mut &worker.ready, &mut byte).is_ok_and(|n| n == 1) {
                    self.worker.replace(Some(worker));
                }
                self.connection.replace(connection);
                answer.map_err(|(why, sent)| (failed(why), sent))
            }
            Err(_) if waited == Waited::Ready => {
                Err((failed("the store call failed".into()), true))
            }
            Err(_) => Err((failed(call_timed_out), true)),
        }
    }

    /// The server's URL, without the password.
    pub(super) fn url(&self) -> String {
        redact(&self.url)
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

/// The namespace of throttle keys in Redis.
pub const REDIS_THROTTLE_PREFIX: &str = "backoff:throttle:";

/// The adaptive throttle's decisions, run atomically by Redis with the
/// rules of `fleet::throttle` (which its tests pin down) on the server's
/// clock, the probability computed with the same operations in the same
/// order. KEYS[1] is the window, the string `v1 WIDTH` and then each slot's
/// `INDEX REQUESTS SKIPS ACCEPTS`, digits alone, slot 0 first. ARGV:
/// operation (admit, accept, show, reset), the width of the caller's
/// slots in milliseconds, K in thousandths, the draw (a decimal in [0, 1)),
/// the idle time in seconds (the key expires that long after the window it
/// holds), `repair` or `keep` for a corrupt state (as the budget's).
/// Returns {decision (`send`, `skip`, or `none` but for admit; for reset
/// what it found: `nothing`, `state` or `corrupt`), the probability
/// (`%.17g`, 0 but for admit), the counts of the window read at the
/// server's time (requests, skips, accepts), the server's time, repaired,
/// then the window written (or read, for show and reset): its width and
/// the slots' numbers}, every item a string. A reset repairs any state (a
/// value of the wrong type included), and writes nothing where there is
/// none.
const THROTTLE_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local own = tonumber(ARGV[2])
local k = tonumber(ARGV[3]) / 1000
local draw = tonumber(ARGV[4])
local idle = tonumber(ARGV[5])
local slots = 12
local max = 100000000000000
local widest = 216000000
local latest = 253402300799999
local longest = 1031
if now > latest then
  return redis.error_reply('the server clock is past year 9999')
end
local function blank()
  local ring = {}
  for i = 0, slots - 1 do ring[i] = {0, 0, 0, 0} end
  return ring
end
local function empty(s)
  return s[1] == 0 and s[2] == 0 and s[3] == 0 and s[4] == 0
end
-- The width and the ring of a state, or nil for anything that is not a
-- window a store may hold: digits alone, at most 20 of them (tonumber
-- would take 'inf', '0x10' or ' 5' too), every slot in its place.
local function parse(raw)
  if string.sub(raw, 1, 2) ~= 'v1' then return nil end
  local n, pos = {}, 3
  for i = 1, 1 + 4 * slots do
    local _, e, d = string.find(raw, '^ (%d+)', pos)
    if e == nil or #d > 20 then return nil end
    n[i] = tonumber(d)
    pos = e + 1
  end
  if pos ~= #raw + 1 then return nil end
  local width, ring, all_empty = n[1], {}, true
  for i = 0, slots - 1 do
    local s = {n[4 * i + 2], n[4 * i + 3], n[4 * i + 4], n[4 * i + 5]}
    if not empty(s) then
      all_empty = false
      if s[1] % slots ~= i then return nil end
    end
    if s[1] > max or s[2] > max or s[4] > max or s[3] > s[2] then return nil end
    ring[i] = s
  end
  if width == 0 then
    if not all_empty then return nil end
  elseif width > widest then
    return nil
  end
  return width, ring
end
local width, ring = 0, blank()
local repaired = 0
local found = 'nothing'
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' then
  local w, r = nil, nil
  if kind == 'string' and redis.call('STRLEN', KEYS[1]) <= longest then
    w, r = parse(redis.call('GET', KEYS[1]))
  end
  if w ~= nil then
    width, ring, found = w, r, 'state'
  elseif op == 'reset' then
    found = 'corrupt'
  elseif op == 'show' or ARGV[6] ~= 'repair' then
    return redis.error_reply('corrupt throttle state at ' .. KEYS[1])
  else
    repaired = 1
  end
end
-- Whether slot s counts now in slots of width w: the current interval or
-- one of the slots - 1 before it.
local function live(s, w)
  local at = math.floor(now / math.max(w, 1))
  return not empty(s) and s[1] <= at and at - s[1] < slots
end
-- The counts of the live slots, each summed in two parts (its 1e8s and
-- the rest), so that the sums are exact past 2^53.
local hi, lo = {0, 0, 0}, {0, 0, 0}
for i = 0, slots - 1 do
  local s = ring[i]
  if live(s, width) then
    for j = 1, 3 do
      local h = math.floor(s[j + 1] / 100000000)
      hi[j] = hi[j] + h
      lo[j] = lo[j] + (s[j + 1] - h * 100000000)
    end
  end
end
-- A count as the double nearest it (one rounding, as a u64 made a double).
local function near(j) return hi[j] * 100000000 + lo[j] end
-- A count in digits, exactly.
local function digits(j)
  local carry = math.floor(lo[j] / 100000000)
  local h, l = hi[j] + carry, lo[j] - carry * 100000000
  if h == 0 then return string.format('%.0f', l) end
  return string.format('%.0f%08.0f', h, l)
end
local decision, p = 'none', 0
if op == 'reset' then decision = found end
if op == 'admit' then
  local requests = near(1)
  p = (requests - k * near(3)) / (requests + 1)
  if p < 0 then p = 0 end
  if draw >= p then decision = 'send' else decision = 'skip' end
end
if op == 'admit' or op == 'accept' then
  -- The state's width while a slot of it counts, else the caller's.
  local use = own
  if width ~= 0 then
    for i = 0, slots - 1 do
      if live(ring[i], width) then use = width end
    end
  end
  if use ~= width then width, ring = use, blank() end
  local at = math.floor(now / width)
  local s = ring[at % slots]
  if s[1] ~= at or empty(s) then
    s = {at, 0, 0, 0}
    ring[at % slots] = s
  end
  if op == 'admit' then
    s[2] = math.min(s[2] + 1, max)
    if decision == 'skip' then s[3] = math.min(s[3] + 1, s[2]) end
  else
    s[4] = math.min(s[4] + 1, max)
  end
end
local function n(x) return string.format('%.0f', x) end
local window = {n(width)}
for i = 0, slots - 1 do
  for j = 1, 4 do window[#window + 1] = n(ring[i][j]) end
end
if op == 'admit' or op == 'accept' then
  local ttl = idle + math.ceil(width * slots / 1000)
  redis.call('SET', KEYS[1], 'v1 ' .. table.concat(window, ' '), 'EX', n(ttl))
elseif op == 'reset' and found ~= 'nothing' then
  local empty = {}
  for i = 1, 1 + 4 * slots do empty[i] = '0' end
  redis.call('SET', KEYS[1], 'v1 ' .. table.concat(empty, ' '), 'EX', n(idle))
end
local reply = {decision, string.format('%.17g', p), digits(1), digits(2), digits(3), n(now), tostring(repaired)}
for i = 1, #window do reply[#reply + 1] = window[i] end
return reply
";

/// What the throttle script answered.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ThrottleReply {
    /// For admit, whether the attempt is sent; `None` for the other
    /// operations.
    send: Option<bool>,
    /// For reset, what it found (the window is the one it found).
    found: Option<Found<()>>,
    probability: f64,
    /// The counts of the window read, at `now_ms`.
    counts: Counts,
    now_ms: u64,
    /// The window written (read, for show).
    window: Window,
}

/// Reads the throttle script's reply, and whether it repaired a corrupt
/// state; `None` for anything that is not a reply the script makes (a
/// window no store may hold included).
fn throttle_reply(reply: &[String]) -> Option<(ThrottleReply, bool)> {
    // Digits alone: `parse` would take a leading '+'.
    let number = |s: &String| {
        if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u64>().ok()
    };
    let [
        decision,
        probability,
        requests,
        skips,
        accepts,
        now,
        repaired,
        rest @ ..,
    ] = reply
    else {
        return None;
    };
    let [width, slots @ ..] = rest else {
        return None;
    };
    if slots.len() != 4 * SLOTS {
        return None;
    }
    let (send, found) = match decision.as_str() {
        "send" => (Some(true), None),
        "skip" => (Some(false), None),
        "none" => (None, None),
        "nothing" => (None, Some(Found::Nothing)),
        "state" => (None, Some(Found::Held(()))),
        "corrupt" => (None, Some(Found::Corrupt)),
        _ => return None,
    };
    let probability: f64 = probability.parse().ok()?;
    if !(0.0..1.0).contains(&probability) || (send.is_none() && probability != 0.0) {
        return None;
    }
    let most = MAX_COUNT * SLOTS as u64;
    let counts = Counts {
        requests: number(requests)?,
        skips: number(skips)?,
        accepts: number(accepts)?,
    };
    if counts.requests > most || counts.accepts > most || counts.skips > counts.requests {
        return None;
    }
    let mut window = Window {
        width_ms: number(width)?,
        ..Window::default()
    };
    for (slot, n) in window.slots.iter_mut().zip(slots.chunks_exact(4)) {
        *slot = Slot {
            index: number(&n[0])?,
            requests: number(&n[1])?,
            skips: number(&n[2])?,
            accepts: number(&n[3])?,
        };
    }
    let repaired = match repaired.as_str() {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    let now_ms = number(now)?;
    if now_ms > LATEST_MS {
        return None;
    }
    let reply = ThrottleReply {
        send,
        found,
        probability,
        counts,
        now_ms,
        window: window.checked()?,
    };
    Some((reply, repaired))
}

/// An adaptive throttle kept in Redis.
pub struct RedisThrottle {
    server: Rc<Server>,
    timeout: Duration,
    key: String,
    throttle: Throttle,
    /// A corrupt state becomes a fresh window (`--budget-store-fail open`).
    repair: bool,
    script: Lua,
    /// Where a repaired state is told.
    warnings: Warnings,
}

impl std::fmt::Debug for RedisThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisThrottle")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl StoreBackend for RedisThrottle {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
    }
}

impl RedisThrottle {
    /// A throttle `key` at `url` with `throttle`'s limits, as
    /// `RedisBudget::new` opens a budget.
    ///
    /// # Errors
    ///
    /// As `RedisBudget::new`, and for a window or K out of their bounds.
    pub fn new(
        url: &str,
        key: &str,
        throttle: Throttle,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<RedisThrottle, String> {
        if !(MIN_WINDOW_MS..=MAX_WINDOW_MS).contains(&throttle.window_ms) {
            return Err(format!(
                "a throttle's window is from {} to {}",
                human(Duration::from_millis(MIN_WINDOW_MS)),
                human(Duration::from_millis(MAX_WINDOW_MS))
            ));
        }
        if !(1000..=MAX_K_MILLI).contains(&throttle.k_milli) {
            return Err(format!(
                "a throttle's K is from 1 to {}",
                MAX_K_MILLI / 1000
            ));
        }
        Ok(RedisThrottle {
            server: Server::shared(url)?,
            timeout,
            key: format!("{REDIS_THROTTLE_PREFIX}{key}"),
            throttle,
            repair: fail == FailMode::Open,
            script: Lua::decision(THROTTLE_SCRIPT),
            warnings,
        })
    }

    /// Runs the script for `op` and reads its answer. A corrupt state that
    /// became a fresh window is reported here.
    fn call(&self, op: &str, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleReply, StoreError> {
        let args = vec![
            op.to_owned(),
            self.throttle.width_ms().to_string(),
            self.throttle.k_milli.to_string(),
            // The shortest decimal that reads back as `draw`.
            draw.to_string(),
            REDIS_IDLE_TTL.as_secs().to_string(),
            if self.repair { "repair" } else { "keep" }.to_owned(),
        ];
        let reply = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        let unexpected =
            || StoreError::Failed("unexpected reply from the throttle script".to_owned());
        let (reply, repaired) = throttle_reply(&reply).ok_or_else(unexpected)?;
        if (op == "admit") != reply.send.is_some() || (op == "reset") != reply.found.is_some() {
            return Err(unexpected());
        }
        if repaired {
            self.warnings.warn(&format!(
                "adaptive throttle store {}: corrupt throttle state at {}; starting a fresh window",
                self.server.url(),
                self.key
            ));
        }
        Ok(reply)
    }
}

impl ThrottleBackend for RedisThrottle {
    /// Decides on an attempt, `draw` drawn uniformly from [0, 1): the
    /// decision, and the window it counts in (its slots' width times
    /// `SLOTS`), which may be another process's.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached in time, or a signal ends the wait;
    /// the message never shows the password.
    fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<(Decision, u64), StoreError> {
        if !(0.0..1.0).contains(&draw) {
            return Err(StoreError::Failed(format!(
                "a throttle's draw is in [0, 1), not {draw}"
            )));
        }
        let r = self.call("admit", draw, wait)?;
        let send = r.send.unwrap_or(true);
        if send != (draw >= r.probability) || r.window.width_ms == 0 {
            return Err(StoreError::Failed(
                "unexpected reply from the throttle script".to_owned(),
            ));
        }
        let decision = Decision {
            send,
            probability: r.probability,
            counts: r.counts,
        };
        Ok((decision, self.throttle.window_of(r.window.width_ms)))
    }

    /// Counts an accept.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn accept(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        self.call("accept", 0.0, wait).map(|_| ())
    }

    /// The window and the server's time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// As `admit`, and when the state is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Window, u64), StoreError> {
        let r = self.call("show", 0.0, wait)?;
        if r.window.counts(r.now_ms) != r.counts {
            return Err(StoreError::Failed(
                "unexpected reply from the throttle script".to_owned(),
            ));
        }
        Ok((r.window, r.now_ms))
    }

    /// Empties the window, whatever the key held: what it found, and the
    /// server's time.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Window>, u64), StoreError> {
        let r = self.call("reset", 0.0, wait)?;
        let found = r.found.unwrap_or(Found::Nothing).map(|()| r.window);
        Ok((found, r.now_ms))
    }
}

/// Parameters a Unix socket's URL takes (`redis+unix:///path?db=N`).
const UNIX_PARAMETERS: [&str; 4] = ["db", "user", "pass", "protocol"];

/// What a single server's URL asks that would not be done as written,
/// in a line that quotes nothing of it (it may hold a password): a
/// database that is not a number from 0, a parameter the client does not
/// read (`?database=2` would use database 0), a database in the query of
/// a TCP URL (`redis://host/?db=2` would too).
fn single_url_checked(url: &str) -> Result<(), String> {
    const DB: &str = "the database is a number from 0 (a Redis has 16, 0 to 15, unless its `databases` says more)";
    let unix = url.starts_with("redis+unix://") || url.starts_with("unix://");
    let (_, rest) = url.split_once("://").unwrap_or_default();
    let rest = rest.split('#').next().unwrap_or_default();
    let (before, query) = rest.split_once('?').unwrap_or((rest, ""));
    if unix && !before.starts_with('/') {
        return Err(
            "a Unix socket's URL names the socket by its absolute path (redis+unix:///path/to/socket)"
                .into(),
        );
    }
    let digits = |v: &str| !v.is_empty() && v.len() <= 9 && v.bytes().all(|b| b.is_ascii_digit());
    for (key, value) in query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
    {
        if unix && !UNIX_PARAMETERS.contains(&key) {
            return Err(format!(
                "a Unix socket's URL takes db, user, pass and protocol, not '{}' (redis+unix:///path/to/socket?db=N&user=NAME&pass=PASSWORD)",
                key.chars().take(32).collect::<String>()
            ));
        }
        if !unix && key == "db" {
            return Err(
                "a redis:// URL names its database in its path, not in ?db= (redis://host:port/N)"
                    .into(),
            );
        }
        if unix && key == "db" && !digits(value) {
            return Err(format!("{DB}, in ?db="));
        }
    }
    if !unix {
        // The path after the host, if any, is the database.
        let path = before.split_once('/').map_or("", |(_, path)| path);
        let path = path.trim_matches('/');
        if !path.is_empty() && !digits(path) {
            return Err(format!("{DB}, in the path (redis://host:port/N)"));
        }
    }
    Ok(())
}

/// A client's error as a sentence: without the name of its kind, which
/// the client adds to what it says of a URL (`Missing path -
/// InvalidClientConfig`).
fn plain_error(e: &redis::RedisError) -> String {
    let text = e.to_string();
    let kind = format!(" - {:?}", e.kind());
    match text.split_once(&kind) {
        Some((said, "")) => said.to_owned(),
        Some((said, detail)) => format!("{said}{}", detail.trim_start_matches(':')),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_single_servers_url_asks_for_nothing_it_would_not_get() {
        for ok in [
            "redis://127.0.0.1",
            "redis://127.0.0.1:6379/",
            "redis://u:p%2Fw@host:6379/15",
            "rediss://host/0?protocol=resp3",
            "redis+unix:///run/redis.sock",
            "unix:///run/redis.sock?db=3&user=me&pass=s3cret",
        ] {
            assert_eq!(single_url_checked(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("redis://host/abc", "the database is a number from 0"),
            ("redis://host/-1", "in the path"),
            ("redis://host/?db=2", "names its database in its path"),
            ("redis+unix:///run/redis.sock?db=-1", ", in ?db="),
            ("redis+unix:///run/redis.sock?db=abc", ", in ?db="),
            (
                "redis+unix:///run/redis.sock?db=99999999999999999999",
                ", in ?db=",
            ),
            ("unix:///run/redis.sock?database=2", "not 'database'"),
            ("unix:///run/redis.sock?password=s3cret", "not 'password'"),
        ] {
            let e = single_url_checked(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        for no_path in ["redis+unix://", "unix://host/run/redis.sock"] {
            let e = single_url_checked(no_path).unwrap_err();
            assert!(e.contains("by its absolute path"), "{e}");
        }
        assert_eq!(single_url_checked("rediss://host/2#insecure"), Ok(()));
        let e = redis::Client::open("rediss://host:70000").err().unwrap();
        assert!(!plain_error(&e).contains("InvalidClientConfig"), "{e}");
    }

    #[test]
    fn the_expiry_is_the_cutoff_on_the_servers_clock_never_later() {
        let earlier = Instant::now();
        let read_by = earlier + Duration::from_secs(1);
        let reply = ["1764600000".to_owned(), "250999".to_owned()];
        let clock = Clock::read(&reply, read_by).unwrap_or_else(|| panic!("a clock"));
        assert_eq!(clock.server_ms, 1_764_600_000_250);
        assert_eq!(clock.at(read_by), 1_764_600_000_250);
        let later = read_by + Duration::from_micros(1999);
        assert_eq!(clock.at(later), 1_764_600_000_251, "rounded down");
        assert_eq!(clock.at(earlier), clock.server_ms);
        for bad in [&["x", "1"][..], &["1"], &["1", "2", "3"], &["-1", "0"]] {
            let bad: Vec<String> = bad.iter().map(|s| (*s).to_owned()).collect();
            assert!(Clock::read(&bad, read_by).is_none(), "{bad:?}");
        }
        let huge = [u64::MAX.to_string(), "0".to_owned()];
        assert!(Clock::read(&huge, read_by).is_none());
        let max = Clock {
            server_ms: u64::MAX,
            read_by,
        };
        assert_eq!(max.at(later), u64::MAX);
    }

    #[test]
    fn a_call_is_applied_at_the_latest_a_tenth_of_the_timeout_before_its_deadline() {
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            cutoff(deadline, Duration::from_millis(250)) + Duration::from_millis(25),
            deadline
        );
    }

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

    #[test]
    fn the_throttle_script_knows_the_limits_of_a_window() {
        for line in [
            format!("local slots = {SLOTS}\n"),
            format!("local max = {MAX_COUNT}\n"),
            format!("local widest = {}\n", MAX_WINDOW_MS / SLOTS as u64),
            format!("local latest = {LATEST_MS}\n"),
            // `v1`, then the width and the slots' numbers, each a space and
            // at most 20 digits.
            format!("local longest = {}\n", 2 + (1 + 4 * SLOTS) * 21),
        ] {
            assert!(THROTTLE_SCRIPT.contains(&line), "{line}");
        }
    }

    /// A reply of the throttle script: `head` (decision, probability,
    /// requests, skips, accepts, now, repaired), then `window`.
    fn throttle_items(head: [&str; 7], window: &Window) -> Vec<String> {
        let mut items: Vec<String> = head.map(String::from).to_vec();
        items.push(window.width_ms.to_string());
        for s in window.slots {
            for n in [s.index, s.requests, s.skips, s.accepts] {
                items.push(n.to_string());
            }
        }
        items
    }

    #[test]
    fn a_throttle_reply_is_read_strictly() {
        let mut w = Window {
            width_ms: 10_000,
            ..Window::default()
        };
        w.slots[1] = Slot {
            index: 13,
            requests: 5,
            skips: 2,
            accepts: 1,
        };
        let items = throttle_items(["skip", "0.5", "5", "2", "1", "130000", "1"], &w);
        let (r, repaired) = throttle_reply(&items).unwrap_or_else(|| panic!("a reply"));
        assert!(repaired);
        assert_eq!(
            r,
            ThrottleReply {
                send: Some(false),
                found: None,
                probability: 0.5,
                counts: Counts {
                    requests: 5,
                    skips: 2,
                    accepts: 1
                },
                now_ms: 130_000,
                window: w,
            }
        );
        let shown = throttle_items(["none", "0", "0", "0", "0", "1", "0"], &Window::default());
        assert_eq!(throttle_reply(&shown).map(|(r, _)| r.send), Some(None));
        let bad_heads = [
            ["maybe", "0.5", "5", "2", "1", "130000", "1"],
            ["skip", "1", "5", "2", "1", "130000", "1"],
            ["skip", "-0.1", "5", "2", "1", "130000", "1"],
            ["skip", "NaN", "5", "2", "1", "130000", "1"],
            ["skip", "inf", "5", "2", "1", "130000", "1"],
            ["none", "0.5", "5", "2", "1", "130000", "1"],
            ["skip", "0.5", "+5", "2", "1", "130000", "1"],
            ["skip", "0.5", "5", "6", "1", "130000", "1"],
            ["skip", "0.5", "5", "2", "", "130000", "1"],
            ["skip", "0.5", "5", "2", "1", "253402300800000", "1"],
            ["skip", "0.5", "5", "2", "1", "130000", "2"],
            ["skip", "0.5", "12000000000000001", "2", "1", "130000", "0"],
        ];
        for head in bad_heads {
            assert_eq!(throttle_reply(&throttle_items(head, &w)), None, "{head:?}");
        }
        let head = ["send", "0", "0", "0", "0", "1", "0"];
        let mut misplaced = w;
        misplaced.slots.swap(1, 2);
        let mut too_many_skips = w;
        too_many_skips.slots[1].skips = 6;
        let mut no_width = w;
        no_width.width_ms = 0;
        for bad in [misplaced, too_many_skips, no_width] {
            assert_eq!(throttle_reply(&throttle_items(head, &bad)), None, "{bad:?}");
        }
        let mut short = throttle_items(head, &w);
        short.pop();
        assert_eq!(throttle_reply(&short), None);
        let mut long = throttle_items(head, &w);
        long.push("0".into());
        assert_eq!(throttle_reply(&long), None);
        assert_eq!(throttle_reply(&[]), None);
    }

    proptest::proptest! {
        #[test]
        fn any_throttle_reply_is_a_window_a_store_may_hold_or_unexpected(
            head in proptest::collection::vec(
                proptest::prop_oneof![
                    Just("send".to_owned()),
                    Just("skip".to_owned()),
                    Just("none".to_owned()),
                    "[0-9]{1,25}",
                    "0\\.[0-9]{1,20}",
                    any::<u64>().prop_map(|n| n.to_string()),
                    any::<f64>().prop_map(|n| n.to_string()),
                    any::<String>(),
                ],
                0..9,
            ),
            slots in proptest::collection::vec(
                proptest::prop_oneof![
                    Just("0".to_owned()),
                    "[0-9]{1,3}",
                    (0..=MAX_COUNT + 1).prop_map(|n| n.to_string()),
                    any::<u64>().prop_map(|n| n.to_string()),
                    any::<String>(),
                ],
                0..=4 * SLOTS + 2,
            ),
        ) {
            let reply: Vec<String> = head.into_iter().chain(slots).collect();
            if let Some((r, _)) = throttle_reply(&reply) {
                proptest::prop_assert_eq!(reply.len(), 8 + 4 * SLOTS);
                proptest::prop_assert_eq!(r.window.checked(), Some(r.window));
                proptest::prop_assert!((0.0..1.0).contains(&r.probability));
                proptest::prop_assert!(r.counts.skips <= r.counts.requests);
                proptest::prop_assert!(r.now_ms <= LATEST_MS);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_throttle_reply_of_any_window_reads_back_and_one_item_changed_never_panics(
            width in 1..=MAX_WINDOW_MS / SLOTS as u64,
            slots in proptest::collection::vec(
                (0..MAX_COUNT / SLOTS as u64, 0..=MAX_COUNT, 0..=MAX_COUNT, 0..=MAX_COUNT),
                SLOTS,
            ),
            now in 0..=LATEST_MS,
            probability in 0.0f64..1.0,
            changed in proptest::option::of((0..8 + 4 * SLOTS, any::<String>())),
        ) {
            let mut w = Window { width_ms: width, ..Window::default() };
            for (i, (n, requests, skips, accepts)) in slots.into_iter().enumerate() {
                let index = n * SLOTS as u64 + i as u64;
                w.slots[i] = Slot { index, requests, skips: skips.min(requests), accepts };
            }
            let c = w.counts(now);
            let numbers = [c.requests, c.skips, c.accepts, now].map(|n| n.to_string());
            let p = format!("{probability:.17e}");
            let head = ["skip", &p, &numbers[0], &numbers[1], &numbers[2], &numbers[3], "0"];
            let mut items = throttle_items(head, &w);
            match changed {
                None => {
                    let (r, repaired) = throttle_reply(&items).unwrap_or_else(|| panic!("a reply"));
                    proptest::prop_assert!(!repaired);
                    proptest::prop_assert_eq!(r.window, w);
                    proptest::prop_assert_eq!(r.counts, c);
                    proptest::prop_assert_eq!(r.probability.to_bits(), probability.to_bits());
                }
                Some((at, item)) => {
                    items[at] = item;
                    if let Some((r, _)) = throttle_reply(&items) {
                        proptest::prop_assert_eq!(r.window.checked(), Some(r.window));
                        proptest::prop_assert!((0.0..1.0).contains(&r.probability));
                        proptest::prop_assert!(r.counts.skips <= r.counts.requests);
                    }
                }
            }
        }
    }
}
