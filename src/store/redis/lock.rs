//! `--lock` for a fleet: a lease in Redis (or a Redis Cluster), one hash
//! `backoff:lock:KEY` per lock, changed only by one Lua script on the
//! server's clock:
//!
//! - `token`: the holder's random token (128 bits), which only the holder
//!   knows: renewing and letting go compare it first;
//! - `expires`: when the lease ends, in Unix milliseconds on the server's
//!   clock, unless renewed before;
//! - `record`: the holder's record (`fleet::lock::Holder`), for the runs it
//!   keeps out;
//! - `fence`: the fencing token of the last acquisition
//!   (`fleet::lock::next_fence`: one more than the one before, and never
//!   below the server's clock in microseconds, so that a store that lost
//!   its data still hands out a larger one), kept when the lease is let go
//!   and by `backoff lock reset`: the command gets it as
//!   `BACKOFF_LOCK_TOKEN`, so that what the job writes can refuse a holder
//!   whose lease was lost (its token is lower than the latest);
//! - `settle`: when the next holder may start its command: after a term
//!   for a lock the store had no trace of (see below), and after the end
//!   of a lease that `backoff lock reset --force` removed (its holder runs
//!   on until its next renewal, or the end of its term). Kept when a
//!   lease is let go, so that a run that ends before its wait is over
//!   leaves the wait to the next.
//!
//! The key never expires, since it holds the fencing token: a lock costs
//! the store one small hash for good. A lease is renewed every third of
//! `--lock-ttl` by a thread of its own, on a connection of its own; a
//! holder that cannot renew it starts ending its attempt in time for the
//! attempt to be gone before the server can free the lease
//! (`fleet::lock::Lease`): the run is told (`LockBackend::lost`) and woken
//! (`alarm`), and ends.
//!
//! A key with no fencing token is a lock the store has no trace of: its
//! first use, or a store that lost its data (`FLUSHALL`, a restart without
//! persistence, a failover to a replica that had not got the lease). A
//! holder of the lost lease runs on until its next renewal tells it, or
//! until its own term ends: the run that takes such a lock waits one
//! `--lock-ttl` before it starts.
//!
//! An acquisition whose answer never came (a reply lost, a connection cut,
//! the time up) may have been granted all the same: within `--lock-wait` it
//! is asked again with the same token, which the script grants again to
//! its holder; otherwise the lease is given back by its token (compare and
//! delete) before the run ends.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::duration::human;
use crate::fleet::lock::{Forgotten, Holder, Lease, MAX_RECORD, Settle};
use crate::run::{Wait, Waited};
use crate::store::redis::{Lua, Server};
use crate::store::{
    Acquired, Alarm, Backend as StoreBackend, LockBackend, LockState, Loss, StoreError, Unwatched,
};
use crate::sys::since_boot;

/// The first lines of the scripts of leases (the lock's, the semaphore's
/// of `redis_slots`): the server's time, the bounds, the type of the key,
/// and how numbers are written and read.
macro_rules! lease_prelude {
    () => {
        r"
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local max_fence = 9007199254740991
local longest = 86400000 + 60000
local function n(x) return string.format('%.0f', x) end
local kind = redis.call('TYPE', KEYS[1]).ok
-- Digits alone, at most `most`; nil for anything else.
local function digits(raw, most)
  if type(raw) == 'string' and #raw <= 16 and string.match(raw, '^%d+$') then
    local v = tonumber(raw)
    if v <= most then return v end
  end
  return nil
end
"
    };
}
pub(super) use lease_prelude;

/// The namespace of lock keys in Redis.
pub const REDIS_LOCK_PREFIX: &str = "backoff:lock:";

/// The lock script. KEYS[1]: the lock. ARGV: operation (acquire, renew,
/// release, show, reset), the caller's token, the lease's length in
/// milliseconds, the holder's record, `force` for a reset of a held lock,
/// and the call's expiry (see `EXPIRY`). A key that is not a hash, or whose
/// fencing token, expiry or settling time is out of shape or bounds, is
/// corrupt: refused (an error that says so), told by show, and removed by
/// a reset (the next acquisition then settles as after a loss of data).
/// Returns {status, record, expires, now, fence, settle, note}: status
/// `held` (acquired, or for show held by someone), `busy`, `renewed`,
/// `lost`, `released`, `not_owner`, `free`, `cleared`, `removed`,
/// `corrupt` (show) or `repaired` (reset); `expires` and `now` in Unix
/// milliseconds on the server's clock; `fence` empty where there is none;
/// `settle` the milliseconds an acquirer waits before it starts; `note`
/// what was corrupt, or how a lease was lost.
const LOCK_SCRIPT: &str = concat!(
    lease_prelude!(),
    r"
local op = ARGV[1]
local function corrupt(note, record)
  if op == 'reset' then
    redis.call('DEL', KEYS[1])
    return {'repaired', record, '0', n(now), '', '0', note}
  elseif op == 'show' then
    return {'corrupt', record, '0', n(now), '', '0', note}
  end
  return redis.error_reply('CORRUPT the lock key ' .. note .. '; backoff lock reset repairs it')
end
if kind ~= 'hash' and kind ~= 'none' then
  return corrupt('holds a ' .. kind .. ', not a hash', '')
end
local f = redis.call('HMGET', KEYS[1], 'token', 'record', 'expires', 'fence', 'settle',
  'replaced', 'replaced_until')
local holder, record = f[1], f[2] or ''
if string.len(record) > 512 then
  record = ''
end
local fence, expires, settle = nil, nil, 0
if f[4] then
  fence = digits(f[4], max_fence - 1)
  if fence == nil then return corrupt('has a fencing token out of bounds', record) end
end
if f[3] then
  expires = digits(f[3], now + longest)
  if expires == nil then return corrupt('has a lease that ends too far ahead', record) end
end
if f[5] then
  settle = digits(f[5], now + longest)
  if settle == nil then return corrupt('has a settling time too far ahead', record) end
end
-- The holder a run of --lock-replace took the lease from, until it lets
-- go or its lease would have run out.
local replaced, replaced_until = f[6], 0
if f[7] then
  replaced_until = digits(f[7], now + longest)
  if replaced_until == nil then return corrupt('has a replaced lease that ends too far ahead', record) end
end
if replaced == nil or replaced_until <= now then replaced, replaced_until = nil, 0 end
local live = holder and expires and expires > now
if op == 'replace' and not (live and holder ~= ARGV[2]) then op = 'acquire' end
local fence_text = ''
if fence then fence_text = n(fence) end
local function answer(status, r, e, note)
  return {status, r or '', n(e or 0), n(now), fence_text, '0', note or ''}
end
if op == 'replace' then
  -- The lease is taken from its holder, which ends at its next renewal
  -- and lets go; the new holder starts once it has, or once its lease
  -- would have run out. A holder replaced before it started is waited
  -- out too.
  local ends = now + tonumber(ARGV[3])
  settle = math.max(settle, replaced_until)
  fence = math.max((fence or 0) + 1, now_us)
  redis.call('HSET', KEYS[1], 'token', ARGV[2], 'record', ARGV[4], 'expires', n(ends),
    'fence', n(fence), 'settle', n(settle), 'replaced', holder, 'replaced_until', n(expires))
  return {'held', ARGV[4], n(ends), n(now), n(fence), n(math.max(settle, expires) - now), 'replacing'}
elseif op == 'acquire' then
  local ends = now + tonumber(ARGV[3])
  if live and holder == ARGV[2] then
    -- This run's own lease, granted to a call whose answer was lost, or
    -- asked again while the holder it replaced lets go.
    redis.call('HSET', KEYS[1], 'expires', n(ends))
    local why = 'pending'
    if replaced then why = 'replacing' end
    return {'held', record, n(ends), n(now), fence_text,
      n(math.max(settle - now, replaced_until - now, 0)), why}
  end
  if replaced == ARGV[2] then
    return answer('busy', record, expires, 'replaced')
  end
  if live then
    return answer('busy', record, expires)
  end
  -- No fencing token: the store has no trace of the lock (its first use,
  -- or its data lost), and a holder it forgot may still run for a term.
  -- A settling time still ahead (a run that took such a lock and ended
  -- before its wait was over; a lease that a reset removed) is waited
  -- out too.
  local wait, why = math.max(settle - now, replaced_until - now, 0), 'pending'
  if fence == nil then
    wait, why = math.max(wait, tonumber(ARGV[3])), 'forgotten'
  end
  fence = math.max((fence or 0) + 1, now_us)
  redis.call('HSET', KEYS[1], 'token', ARGV[2], 'record', ARGV[4], 'expires', n(ends),
    'fence', n(fence), 'settle', n(now + wait))
  redis.call('PERSIST', KEYS[1])
  return {'held', ARGV[4], n(ends), n(now), n(fence), n(wait), why}
elseif op == 'renew' then
  if live and holder == ARGV[2] then
    local ends = now + tonumber(ARGV[3])
    redis.call('HSET', KEYS[1], 'expires', n(ends))
    return answer('renewed', '', ends)
  end
  local how = 'removed'
  if replaced == ARGV[2] then
    how = 'replaced'
  elseif kind == 'none' or fence == nil then
    how = 'forgotten'
  elseif holder == ARGV[2] then
    how = 'expired'
  elseif holder then
    how = 'taken'
  end
  return answer('lost', record, expires, how)
elseif op == 'release' then
  if holder == ARGV[2] then
    redis.call('HDEL', KEYS[1], 'token', 'record', 'expires')
    return answer('released', '', 0)
  end
  if replaced == ARGV[2] then
    -- A holder replaced lets go: the run that took over may start.
    redis.call('HDEL', KEYS[1], 'replaced', 'replaced_until')
    return answer('released', '', 0)
  end
  return answer('not_owner', record, expires)
elseif op == 'show' then
  if live then
    return answer('held', record, expires)
  end
  return answer('free', record, expires)
elseif op == 'reset' then
  if live and ARGV[5] ~= 'force' then
    return answer('held', record, expires)
  end
  redis.call('HDEL', KEYS[1], 'token', 'record', 'expires')
  if live then
    -- Its holder runs on until its next renewal, or until the end of its
    -- term if it cannot reach the store: the next run waits until then.
    redis.call('HSET', KEYS[1], 'settle', n(math.max(settle, expires, replaced_until)))
    return answer('removed', record, expires)
  end
  return answer('cleared', record, expires)
end
return redis.error_reply('ERR unknown operation')
"
);

/// What the lock script answered.
#[derive(Debug)]
struct Reply {
    status: String,
    holder: Option<Holder>,
    /// The fencing token of the last acquisition, if the store holds one.
    fence: Option<u64>,
    /// How long the lease lasts from the server's now (zero when it is
    /// over).
    left: Duration,
    /// How long an acquirer waits before it starts.
    settle: Duration,
    note: String,
}

/// Reads the lock script's reply; `None` for anything else. The record is
/// whatever was stored: it is read within bounds, and a record out of shape
/// is no holder.
fn reply(answer: &[String]) -> Option<Reply> {
    let [status, record, expires, now, fence, settle, note] = answer else {
        return None;
    };
    let number = |s: &String| s.parse::<u64>().ok();
    let (expires, now, settle) = (number(expires)?, number(now)?, number(settle)?);
    let fence = match fence.as_str() {
        "" => None,
        f => Some(f.parse::<u64>().ok()?),
    };
    let holder = (record.len() <= MAX_RECORD)
        .then(|| Holder::parse(record.as_bytes()))
        .flatten()
        .map(|h| Holder { token: fence, ..h });
    Some(Reply {
        status: status.clone(),
        holder,
        fence,
        left: Duration::from_millis(expires.saturating_sub(now)),
        // A lease is at most a day: so is the wait.
        settle: Duration::from_millis(settle.min(86_400_000)),
        note: crate::report::cut_quote(note, 128).into_owned(),
    })
}

/// A lease this run holds.
struct Held {
    token: String,
    /// Dropped to stop the renewals.
    stop: mpsc::Sender<()>,
}

/// A lock kept in Redis as a lease.
pub struct RedisLock {
    server: Rc<Server>,
    url: String,
    key: String,
    lease: Lease,
    timeout: Duration,
    script: Lua,
    /// The script's text, and what its calls add to their arguments.
    source: &'static str,
    extra: Vec<String>,
    held: RefCell<Option<Held>>,
    loss: Loss,
    /// `--lock-replace`: the lease is taken from its holder.
    replace: bool,
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// How long a run tries to give back a lease whose grant it never heard
/// of, at most, when the store's timeout is shorter: the lease stands for
/// its whole term if it cannot be given back.
const GIVE_BACK: Duration = Duration::from_secs(2);

/// How long that is tried once a signal ends the run, which it holds up no
/// longer.
const AFTER_SIGNAL: Duration = Duration::from_millis(250);

/// How often the thread that renews a lease looks at the time, at least.
const LOOK: Duration = Duration::from_secs(1);

impl RedisLock {
    /// The lock `key` at `url`, a lease of `lease`; each call waits at most
    /// `timeout`. Checks the URL only.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub fn new(
        url: &str,
        key: &str,
        lease: Lease,
        timeout: Duration,
        replace: bool,
    ) -> Result<RedisLock, String> {
        let mut lock =
            RedisLock::leased(url, &format!("{REDIS_LOCK_PREFIX}{key}"), lease, timeout)?;
        lock.replace = replace;
        Ok(lock)
    }

    /// The leases of the Redis key `key` (its whole name) at `url`, kept
    /// by the script `source`, whose calls all end with `extra`
    /// (`redis_slots`' semaphore); `LOCK_SCRIPT` with nothing more
    /// otherwise.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub(super) fn leased(
        url: &str,
        key: &str,
        lease: Lease,
        timeout: Duration,
    ) -> Result<RedisLock, String> {
        Ok(RedisLock {
            server: Server::shared(url)?,
            url: url.to_owned(),
            key: key.to_owned(),
            lease,
            timeout,
            script: Lua::decision(LOCK_SCRIPT),
            source: LOCK_SCRIPT,
            extra: Vec::new(),
            held: RefCell::new(None),
            loss: Loss::default(),
            replace: false,
        })
    }

    /// The same lock, kept by the script `source`, whose calls all end
    /// with `extra`.
    pub(super) fn by(mut self, source: &'static str, extra: Vec<String>) -> RedisLock {
        self.script = Lua::decision(source);
        self.source = source;
        self.extra = extra;
        self
    }

    /// Calls the script; for a call that failed, whether it may have been
    /// applied all the same.
    fn call(
        &self,
        op: &str,
        token: &str,
        record: &str,
        force: bool,
        timeout: Duration,
        wait: &mut dyn Wait,
    ) -> Result<Reply, (StoreError, bool)> {
        let answer = self.server.call_telling(
            &self.script,
            &self.key,
            args(op, token, self.lease.ttl, record, force, &self.extra),
            timeout,
            wait,
        )?;
        reply(&answer).ok_or_else(|| {
            (
                StoreError::Failed("unexpected reply from the lock script".into()),
                false,
            )
        })
    }

    /// Starts renewing the lease `token`, taken at `since` (a reading of
    /// `since_boot` by which the server had started it).
    ///
    /// # Errors
    ///
    /// When the thread that renews it cannot be started.
    fn renew_from(&self, token: &str, since: Duration) -> std::io::Result<Held> {
        let (stop, stopped) = mpsc::channel::<()>();
        let renewal = Renewal {
            url: self.url.clone(),
            source: self.source,
            extra: self.extra.clone(),
            key: self.key.clone(),
            token: token.to_owned(),
            lease: self.lease,
            loss: self.loss.clone(),
        };
        std::thread::Builder::new()
            .name("lock renewal".into())
            .spawn(move || renewal.run(&stopped, since))?;
        Ok(Held {
            token: token.to_owned(),
            stop,
        })
    }

    /// Gives back the lease `token` (compare and delete), which a call whose
    /// answer was lost may have granted: tried again for `limit` while the
    /// store does not answer, and given up at a signal. Whether the store
    /// answered (the lease is gone, or was never there).
    fn give_back(&self, token: &str, wait: &mut dyn Wait, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.call("release", token, "", false, self.timeout.min(left), wait) {
                Ok(_) => return true,
                Err((StoreError::Interrupted(_), _)) => return false,
                Err((StoreError::Failed(_), _)) => {}
            }
            let pause =
                Duration::from_millis(100).min(until.saturating_duration_since(Instant::now()));
            if let Waited::Signal(_) = wait.wait_ready(None, Instant::now() + pause) {
                return false;
            }
        }
    }

    /// Holds the lease `token` the store granted (`r`) to a call sent at
    /// `asked`: renews it from now on. A lease nothing renews would be lost
    /// mid-run: when the thread that renews it cannot start, it is given
    /// back (within `limit`), and the lock is unavailable.
    fn hold(
        &self,
        token: &str,
        asked: Duration,
        r: &Reply,
        limit: Duration,
    ) -> Result<Acquired, StoreError> {
        let held = self.renew_from(token, asked).map_err(|e| {
            let why = StoreError::Failed(format!(
                "cannot start the thread that renews the lease: {e}"
            ));
            self.unavailable(why, token, &mut Unwatched, limit)
        })?;
        *self.held.borrow_mut() = Some(held);
        let settle = (!r.settle.is_zero()).then_some(Settle {
            wait: r.settle,
            why: if r.note == "forgotten" {
                Forgotten::Lease
            } else {
                Forgotten::Pending
            },
        });
        Ok(Acquired::Held {
            token: r.fence,
            settle,
        })
    }

    /// Waits a little while the holder this run replaced lets go (`r`, the
    /// answer that told so); a signal ends the wait, and the lease is given
    /// back (within `limit`).
    ///
    /// # Errors
    ///
    /// The signal.
    fn while_replaced(
        &self,
        r: &Reply,
        token: &str,
        wait: &mut dyn Wait,
        limit: Duration,
    ) -> Result<(), StoreError> {
        let pause = r.settle.min(Duration::from_millis(100));
        if let Waited::Signal(sig) = wait.wait_ready(None, Instant::now() + pause) {
            self.give_back(token, &mut Unwatched, limit);
            return Err(StoreError::Interrupted(sig));
        }
        Ok(())
    }

    /// `why` the lock could not be had, with what became of a lease that a
    /// call whose answer was lost may have granted: given back within
    /// `limit`, or left to run out.
    fn unavailable(
        &self,
        why: StoreError,
        token: &str,
        wait: &mut dyn Wait,
        limit: Duration,
    ) -> StoreError {
        let StoreError::Failed(why) = why else {
            return why;
        };
        StoreError::Failed(if self.give_back(token, wait, limit) {
            format!("{why}; a lease it may have granted unheard of was given back")
        } else {
            format!(
                "{why}; a lease it may have granted unheard of could not be given back, and keeps other runs out for {} at most (--lock-ttl)",
                human(self.lease.ttl)
            )
        })
    }
}

/// The script's arguments, then `extra` (the call's expiry is added by
/// the call).
fn args(
    op: &str,
    token: &str,
    ttl: Duration,
    record: &str,
    force: bool,
    extra: &[String],
) -> Vec<String> {
    let mut args = vec![
        op.to_owned(),
        token.to_owned(),
        ttl.as_millis().to_string(),
        record.to_owned(),
        if force { "force" } else { "" }.to_owned(),
    ];
    args.extend_from_slice(extra);
    args
}

/// How a lease the store no longer held for this run was lost, as the
/// renewal's answer tells.
fn lost_how(note: &str) -> String {
    match note {
        "expired" => "its lease had expired before it was renewed".to_owned(),
        "taken" => "another run holds the lock now: this run's lease ran out, was removed (backoff lock reset --force), or was lost with the store's data".to_owned(),
        "forgotten" => "the store has no trace of its lease any more (it lost its data: a restart without persistence, FLUSHALL, a failover)".to_owned(),
        "replaced" => "another run took its lease over (--lock-replace)".to_owned(),
        _ => "its lease was removed (backoff lock reset --force)".to_owned(),
    }
}

/// The renewals of a lease, on a thread and a connection of their own.
struct Renewal {
    url: String,
    source: &'static str,
    extra: Vec<String>,
    key: String,
    token: String,
    lease: Lease,
    loss: Loss,
}

impl Renewal {
    /// Renews every third of the lease until told to stop. A lease that
    /// the server says is gone is lost at once; one that could not be
    /// renewed is lost when the holder must start ending its attempt so
    /// that the attempt is gone before the lease can run out
    /// (`Lease::end_from`). Times are read on a clock that counts time
    /// asleep, which the server's counts too, and looked at every second
    /// at least, so that a host that wakes from a sleep longer than the
    /// lease ends its attempt within a second.
    fn run(self, stop: &mpsc::Receiver<()>, taken: Duration) {
        let script = Lua::decision(self.source);
        let server = Server::open(&self.url).ok();
        // The lease surely lasts until then: its term from the moment the
        // call that began it was sent.
        let mut until = taken.saturating_add(self.lease.ttl);
        let mut replaced = false;
        let every = self.lease.every();
        let mut next = taken.saturating_add(every);
        let why = loop {
            let end = self.lease.end_from(until);
            let now = since_boot();
            if now >= end {
                break format!(
                    "it could not be renewed: the store did not answer for {}, and the attempt must be gone before the lease can run out",
                    human(now.saturating_sub(until.saturating_sub(self.lease.ttl)))
                );
            }
            let sleep = next.min(end).saturating_sub(now).min(LOOK);
            match stop.recv_timeout(sleep) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let asked = since_boot();
            if asked >= end || asked < next {
                continue;
            }
            let answer = server.as_ref().map(|server| {
                server.call(
                    &script,
                    &self.key,
                    args("renew", &self.token, self.lease.ttl, "", false, &self.extra),
                    end.saturating_sub(asked).min(every),
                    &mut Unwatched,
                )
            });
            match answer.and_then(Result::ok).as_deref().and_then(reply) {
                Some(r) if r.status == "renewed" => {
                    until = asked.saturating_add(self.lease.ttl);
                    next = asked.saturating_add(every);
                }
                Some(r) if r.status == "lost" => {
                    replaced = r.note == "replaced";
                    break lost_how(&r.note);
                }
                // Not answered: tried again soon, while there is time.
                _ => {
                    next = since_boot().saturating_add((every / 6).max(Duration::from_millis(100)));
                }
            }
        };
        // A run that let go meanwhile stopped the renewals: no loss.
        if matches!(stop.try_recv(), Err(mpsc::TryRecvError::Empty)) {
            if replaced {
                self.loss.replace(why);
            } else {
                self.loss.lose(why);
            }
        }
    }
}

impl StoreBackend for RedisLock {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
    }
}

impl LockBackend for RedisLock {
    fn acquire(
        &self,
        me: &Holder,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Acquired, StoreError> {
        use rand::RngExt as _;
        let token = format!("{:032x}", rand::rng().random::<u128>());
        let record = me.record();
        let record = record.trim_end();
        let give_up = Instant::now().checked_add(patience);
        let left = || {
            give_up.map_or(Duration::ZERO, |g| {
                g.saturating_duration_since(Instant::now())
            })
        };
        // Runs that wait ask again after a jittered pause: full jitter on a
        // growing bound, as for any retry, so that they do not all come
        // back at once when the lock is let go.
        let mut bound = Duration::from_millis(50);
        let mut told = false;
        // Whether the last call may have been granted unheard of.
        let mut unheard = false;
        // Each call ends by the run's deadline too; the giving back of a
        // lease granted unheard of by the time backoff exits (the deadline
        // plus --kill-after).
        let until_by = || by.map(|by| by.saturating_duration_since(Instant::now()));
        let exit_by = by.and_then(|by| by.checked_add(self.lease.kill_after));
        let give_back_for = |most: Duration| {
            exit_by.map_or(most, |e| {
                most.min(e.saturating_duration_since(Instant::now()))
            })
        };
        loop {
            let timeout = until_by().map_or(self.timeout, |left| self.timeout.min(left));
            if timeout.is_zero() {
                let why = StoreError::Failed("--max-time passed before the store answered".into());
                return Err(if unheard {
                    let limit = give_back_for(GIVE_BACK.max(self.timeout));
                    self.unavailable(why, &token, wait, limit)
                } else {
                    why
                });
            }
            let asked = since_boot();
            let op = if self.replace { "replace" } else { "acquire" };
            let answered = self
                .call(op, &token, record, false, timeout, wait)
                .and_then(|r| match r.status.as_str() {
                    "held" | "busy" => Ok(r),
                    _ => Err((
                        StoreError::Failed("unexpected reply from the lock script".into()),
                        false,
                    )),
                });
            unheard = matches!(answered, Err((_, true)));
            match answered {
                // Taken over: the holder it replaced lets go first. This
                // run's lease is asked again (and so renewed) meanwhile.
                Ok(r) if r.status == "held" && r.note == "replacing" && !r.settle.is_zero() => {
                    unheard = true;
                    if !std::mem::replace(&mut told, true) {
                        waiting(None);
                    }
                    let limit = give_back_for(AFTER_SIGNAL.min(self.timeout));
                    self.while_replaced(&r, &token, wait, limit)?;
                    continue;
                }
                Ok(r) if r.status == "held" => {
                    return self.hold(&token, asked, &r, give_back_for(self.timeout));
                }
                // Replaced in turn before it started: it lets go at once.
                Ok(r) if r.note == "replaced" => {
                    self.give_back(&token, wait, give_back_for(self.timeout));
                    return Ok(Acquired::Busy(r.holder));
                }
                Ok(r) => {
                    if left().is_zero() {
                        return Ok(Acquired::Busy(r.holder));
                    }
                    if !told {
                        told = true;
                        waiting(r.holder.as_ref());
                    }
                }
                Err((StoreError::Interrupted(sig), sent)) => {
                    if sent {
                        let limit = give_back_for(AFTER_SIGNAL.min(self.timeout));
                        self.give_back(&token, &mut Unwatched, limit);
                    }
                    return Err(StoreError::Interrupted(sig));
                }
                // Within the wait, a store that does not answer is asked
                // again; after it, a lease granted to a call whose answer
                // was lost is given back.
                Err((e, sent)) => {
                    if left().is_zero() {
                        return Err(if sent {
                            let limit = give_back_for(GIVE_BACK.max(self.timeout));
                            self.unavailable(e, &token, wait, limit)
                        } else {
                            e
                        });
                    }
                }
            }
            let pause = rand::rng().random_range(Duration::ZERO..=bound).min(left());
            bound = (bound * 2).min(Duration::from_secs(2));
            if let Waited::Signal(sig) = wait.wait_ready(None, Instant::now() + pause) {
                // A lease the last call may have been granted is given
                // back.
                if unheard {
                    let limit = give_back_for(AFTER_SIGNAL.min(self.timeout));
                    self.give_back(&token, &mut Unwatched, limit);
                }
                return Err(StoreError::Interrupted(sig));
            }
        }
    }

    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Result<(), StoreError> {
        let Some(held) = self.held.borrow_mut().take() else {
            return Ok(());
        };
        drop(held.stop);
        // A lease lost is not this run's to let go: it ran out, was
        // removed or taken, or the store cannot be reached (and the lease
        // ends by its term).
        // One taken over by --lock-replace is let go, by this run's token,
        // so that the run that took it over may start.
        if self.loss.why().is_some() && !self.loss.replaced() {
            return Ok(());
        }
        // Compare and delete: a lease lost meanwhile, now another run's, is
        // left alone. A store that does not answer in time, or a signal,
        // lets the lease run out.
        let timeout = by.map_or(self.timeout, |by| {
            self.timeout
                .min(by.saturating_duration_since(Instant::now()))
        });
        if timeout.is_zero() {
            return Err(StoreError::Failed(
                "--max-time and --kill-after had passed".into(),
            ));
        }
        self.call("release", &held.token, "", false, timeout, wait)
            .map(drop)
            .map_err(|(e, _)| e)
    }

    fn lost(&self) -> Option<String> {
        self.loss.why()
    }

    fn alarm(&self, alarm: Alarm) {
        self.loss.alarm(alarm);
    }

    fn replaced(&self) -> bool {
        self.loss.replaced()
    }

    fn show(&self, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let r = self
            .call("show", "", "", false, self.timeout, wait)
            .map_err(|(e, _)| e)?;
        let held = r.status == "held";
        Ok(LockState {
            held,
            holder: r.holder,
            lease_left: held.then_some(r.left),
            corrupt: (r.status == "corrupt").then_some(r.note),
            slots: Vec::new(),
        })
    }

    fn reset(&self, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let r = self
            .call("reset", "", "", force, self.timeout, wait)
            .map_err(|(e, _)| e)?;
        match r.status.as_str() {
            "held" => Err(StoreError::Failed(format!(
                "{} is held by a live lease{} that ends in {} unless renewed: --force removes it anyway (its holder ends at its next renewal)",
                self.key,
                r.holder
                    .as_ref()
                    .map(|h| format!(" of pid {} on {}", h.pid, h.host))
                    .unwrap_or_default(),
                human(r.left)
            ))),
            status => Ok(LockState {
                held: status == "removed",
                holder: r.holder,
                lease_left: (status == "removed").then_some(r.left),
                corrupt: (status == "repaired").then_some(r.note),
                slots: Vec::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_within_bounds_and_a_bad_record_is_no_holder() {
        let record = Holder {
            pid: 7,
            since_ms: 1,
            token: None,
            run_id: "r".into(),
            host: "h".into(),
        }
        .record();
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let r = reply(&s(&[
            "busy",
            record.trim_end(),
            "5000",
            "4000",
            "9",
            "0",
            "",
        ]))
        .unwrap();
        assert_eq!(r.status, "busy");
        assert_eq!(r.fence, Some(9));
        assert_eq!(r.left, Duration::from_secs(1));
        assert_eq!(r.holder.unwrap().token, Some(9));
        let long = "x".repeat(MAX_RECORD + 1);
        let r = reply(&s(&["busy", &long, "5", "4", "", "0", ""])).unwrap();
        assert_eq!(r.holder, None);
        assert_eq!(r.fence, None);
        // A lease over is no time left; a settling time is a day at most.
        let r = reply(&s(&["held", "", "4", "5", "1", "99999999999", ""])).unwrap();
        assert_eq!(r.left, Duration::ZERO);
        assert_eq!(r.settle, Duration::from_hours(24));
        assert!(reply(&s(&["busy", "", "5", "4", "1", "0"])).is_none());
        assert!(reply(&s(&["busy", "", "5", "4", "-1", "0", ""])).is_none());
        assert!(reply(&s(&["busy", "", "x", "4", "1", "0", ""])).is_none());
        assert!(reply(&s(&["busy", "", "5", "4", "1", "-3", ""])).is_none());
    }

    #[test]
    fn a_lease_lost_says_how() {
        assert!(lost_how("forgotten").contains("lost its data"));
        assert!(lost_how("taken").contains("another run holds the lock"));
        assert!(lost_how("expired").contains("expired"));
        assert!(lost_how("removed").contains("reset --force"));
        assert!(lost_how("anything").contains("removed"));
    }
}
