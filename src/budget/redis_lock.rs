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
//! - `fence`: the fencing counter, one more at each acquisition, never
//!   reset (not by `backoff lock reset` either): the command gets it as
//!   `BACKOFF_LOCK_TOKEN`, so that what the job writes can refuse a holder
//!   whose lease was lost (its token is lower than the latest).
//!
//! The key never expires, since it holds the fencing counter (a counter
//! that restarted would give a new holder a token lower than a stale
//! one's): a lock costs the store one small hash for good. A lease is renewed
//! every third of `--lock-ttl` by a thread of its own, on a connection of
//! its own; one that cannot be renewed before it expires is lost: the run
//! is told (`LockBackend::lost`) and woken (`alarm`), and ends.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use crate::budget::redis::{Lua, Server};
use crate::budget::{
    Acquired, Alarm, Backend as StoreBackend, LockBackend, LockState, StoreError, Unwatched,
};
use crate::fleet::lock::{Holder, MAX_RECORD};
use crate::run::Wait;

/// The namespace of lock keys in Redis.
pub const REDIS_LOCK_PREFIX: &str = "backoff:lock:";

/// The lock script. KEYS[1]: the lock. ARGV: operation (acquire, renew,
/// release, show, reset), the caller's token, the lease's length in
/// milliseconds, the holder's record, `force` for a reset of a held lock, and the call's expiry (see
/// `EXPIRY`). A key that is not a hash is refused, but by a reset, which
/// removes it. Returns {status, record, expires, now, fence}: status
/// `held` (acquired, or for show held by someone), `busy`, `renewed`,
/// `lost`, `released`, `not_owner`, `free`, `cleared` or `removed`.
const LOCK_SCRIPT: &str = r"
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local op = ARGV[1]
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
  if op ~= 'reset' then
    return redis.error_reply('CORRUPT the lock key holds a ' .. kind .. ', not a hash')
  end
  redis.call('DEL', KEYS[1])
end
local f = redis.call('HMGET', KEYS[1], 'token', 'record', 'expires', 'fence')
local holder, record, expires = f[1], f[2] or '', tonumber(f[3])
if string.len(record) > 512 then
  record = ''
end
local fence = f[4] or '0'
local live = holder and expires and expires > now
local function answer(status, r, e)
  return {status, r or '', tostring(e or 0), tostring(now), tostring(fence)}
end
if op == 'acquire' then
  if live then
    return answer('busy', record, expires)
  end
  fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
  local ends = now + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'token', ARGV[2], 'record', ARGV[4], 'expires', tostring(ends))
  redis.call('PERSIST', KEYS[1])
  return answer('held', ARGV[4], ends)
elseif op == 'renew' then
  if live and holder == ARGV[2] then
    local ends = now + tonumber(ARGV[3])
    redis.call('HSET', KEYS[1], 'expires', tostring(ends))
    return answer('renewed', '', ends)
  end
  return answer('lost', record, expires)
elseif op == 'release' then
  if holder == ARGV[2] then
    redis.call('HDEL', KEYS[1], 'token', 'record', 'expires')
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
    return answer('removed', record, expires)
  end
  return answer('cleared', record, expires)
end
return redis.error_reply('ERR unknown operation')
";

/// What the lock script answered.
struct Reply {
    status: String,
    holder: Option<Holder>,
    fence: u64,
}

/// Reads the lock script's reply; `None` for anything else. The record is
/// whatever was stored: it is read within bounds, and a record out of shape
/// is no holder.
fn reply(answer: &[String]) -> Option<Reply> {
    let [status, record, expires, now, fence] = answer else {
        return None;
    };
    let number = |s: &String| s.parse::<u64>().ok();
    let (_, _, fence) = (number(expires)?, number(now)?, number(fence)?);
    let holder = (record.len() <= MAX_RECORD)
        .then(|| Holder::parse(record.as_bytes()))
        .flatten()
        .map(|h| Holder {
            token: Some(fence),
            ..h
        });
    Some(Reply {
        status: status.clone(),
        holder,
        fence,
    })
}

/// A lease this run holds.
struct Lease {
    token: String,
    /// Dropped to stop the renewals.
    stop: mpsc::Sender<()>,
    /// Set by the run when it lets go: a renewal that finds the lease gone
    /// after that is no loss.
    released: Arc<AtomicBool>,
}

/// A lock kept in Redis as a lease.
pub struct RedisLock {
    server: Rc<Server>,
    url: String,
    key: String,
    ttl: Duration,
    timeout: Duration,
    script: Lua,
    held: RefCell<Option<Lease>>,
    lost: Arc<AtomicBool>,
    alarm: Arc<Mutex<Option<Alarm>>>,
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisLock {
    /// The lock `key` at `url`, a lease of `ttl`; each call waits at most
    /// `timeout`. Checks the URL only.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub fn new(
        url: &str,
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<RedisLock, String> {
        Ok(RedisLock {
            server: Server::shared(url)?,
            url: url.to_owned(),
            key: format!("{REDIS_LOCK_PREFIX}{key}"),
            ttl,
            timeout,
            script: Lua::decision(LOCK_SCRIPT),
            held: RefCell::new(None),
            lost: Arc::new(AtomicBool::new(false)),
            alarm: Arc::new(Mutex::new(None)),
        })
    }

    fn call(
        &self,
        op: &str,
        token: &str,
        record: &str,
        force: bool,
        wait: &mut dyn Wait,
    ) -> Result<Reply, StoreError> {
        let answer = self.server.call(
            &self.script,
            &self.key,
            args(op, token, self.ttl, record, force),
            self.timeout,
            wait,
        )?;
        reply(&answer)
            .ok_or_else(|| StoreError::Failed("unexpected reply from the lock script".into()))
    }

    /// Starts renewing the lease `token`, taken at `since` (a local instant
    /// by which the server had started it).
    ///
    /// # Errors
    ///
    /// When the thread that renews it cannot be started.
    fn renew_from(&self, token: &str, since: Instant) -> std::io::Result<Lease> {
        let (stop, stopped) = mpsc::channel::<()>();
        let released = Arc::new(AtomicBool::new(false));
        let renewal = Renewal {
            url: self.url.clone(),
            key: self.key.clone(),
            token: token.to_owned(),
            ttl: self.ttl,
            lost: Arc::clone(&self.lost),
            released: Arc::clone(&released),
            alarm: Arc::clone(&self.alarm),
        };
        std::thread::Builder::new()
            .name("lock renewal".into())
            .spawn(move || renewal.run(&stopped, since))?;
        Ok(Lease {
            token: token.to_owned(),
            stop,
            released,
        })
    }
}

/// The script's arguments (the call's expiry is added by the call).
fn args(op: &str, token: &str, ttl: Duration, record: &str, force: bool) -> Vec<String> {
    vec![
        op.to_owned(),
        token.to_owned(),
        ttl.as_millis().to_string(),
        record.to_owned(),
        if force { "force" } else { "" }.to_owned(),
    ]
}

/// Marks the lease lost and wakes the run, once.
fn lose(lost: &AtomicBool, alarm: &Mutex<Option<Alarm>>) {
    if !lost.swap(true, Ordering::SeqCst)
        && let Some(wake) = alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
    {
        wake();
    }
}

/// The renewals of a lease, on a thread and a connection of their own.
struct Renewal {
    url: String,
    key: String,
    token: String,
    ttl: Duration,
    lost: Arc<AtomicBool>,
    released: Arc<AtomicBool>,
    alarm: Arc<Mutex<Option<Alarm>>>,
}

impl Renewal {
    /// Renews every third of the lease until told to stop; a lease that the
    /// server says is gone, or that could not be renewed before it ran out,
    /// is lost.
    fn run(self, stop: &mpsc::Receiver<()>, taken: Instant) {
        let Ok(server) = Server::open(&self.url) else {
            return;
        };
        let script = Lua::decision(LOCK_SCRIPT);
        // The lease surely lasts until this instant.
        let mut until = taken + self.ttl;
        let every = self.ttl / 3;
        let mut next = every;
        loop {
            match stop.recv_timeout(next) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let asked = Instant::now();
            let answer = server.call(
                &script,
                &self.key,
                args("renew", &self.token, self.ttl, "", false),
                left.min(every),
                &mut Unwatched,
            );
            match answer.ok().as_deref().and_then(reply) {
                Some(r) if r.status == "renewed" => {
                    until = asked + self.ttl;
                    next = every;
                }
                Some(r) if r.status == "lost" => break,
                // Not answered: tried again soon, while the lease lasts.
                _ => next = (every / 4).max(Duration::from_millis(100)),
            }
        }
        if !self.released.load(Ordering::SeqCst) {
            lose(&self.lost, &self.alarm);
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
        wait: &mut dyn Wait,
    ) -> Result<Acquired, StoreError> {
        use rand::RngExt as _;
        let token = format!("{:032x}", rand::rng().random::<u128>());
        let record = me.record();
        let record = record.trim_end();
        let give_up = Instant::now().checked_add(patience);
        // Runs that wait ask again after a jittered pause: full jitter on a
        // growing bound, as for any retry, so that they do not all come
        // back at once when the lock is let go.
        let mut bound = Duration::from_millis(50);
        loop {
            let asked = Instant::now();
            let r = self.call("acquire", &token, record, false, wait)?;
            match r.status.as_str() {
                "held" => {
                    // A lease nothing renews would be lost mid-run: it is
                    // let go at once, and the fail mode decides.
                    let lease = self.renew_from(&token, asked).map_err(|e| {
                        let _ = self.call("release", &token, "", false, &mut Unwatched);
                        StoreError::Failed(format!(
                            "cannot start the thread that renews the lease: {e}"
                        ))
                    })?;
                    *self.held.borrow_mut() = Some(lease);
                    return Ok(Acquired::Held {
                        token: Some(r.fence),
                    });
                }
                "busy" => {}
                _ => {
                    return Err(StoreError::Failed(
                        "unexpected reply from the lock script".into(),
                    ));
                }
            }
            let left = give_up.map_or(Duration::ZERO, |g| {
                g.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Ok(Acquired::Busy(r.holder));
            }
            let pause = rand::rng().random_range(Duration::ZERO..=bound).min(left);
            bound = (bound * 2).min(Duration::from_secs(2));
            if let crate::run::Waited::Signal(sig) = wait.wait_ready(None, Instant::now() + pause) {
                return Err(StoreError::Interrupted(sig));
            }
        }
    }

    fn release(&self) {
        let Some(lease) = self.held.borrow_mut().take() else {
            return;
        };
        lease.released.store(true, Ordering::SeqCst);
        drop(lease.stop);
        // Compare and delete: a lease lost meanwhile, now another run's, is
        // left alone. A store that does not answer lets the lease run out.
        let _ = self.call("release", &lease.token, "", false, &mut Unwatched);
    }

    fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn alarm(&self, alarm: Alarm) {
        *self.alarm.lock().unwrap_or_else(PoisonError::into_inner) = Some(alarm);
    }

    fn show(&self, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let r = self.call("show", "", "", false, wait)?;
        Ok(LockState {
            held: r.status == "held",
            holder: r.holder,
        })
    }

    fn reset(&self, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let r = self.call("reset", "", "", force, wait)?;
        match r.status.as_str() {
            "held" => Err(StoreError::Failed(format!(
                "{} is held{}, a live run: --force removes it anyway (the holder runs on)",
                self.key,
                r.holder
                    .as_ref()
                    .map(|h| format!(" by pid {} on {}", h.pid, h.host))
                    .unwrap_or_default()
            ))),
            status => Ok(LockState {
                held: status == "removed",
                holder: r.holder,
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
        let r = reply(&s(&["busy", record.trim_end(), "5", "4", "9"])).unwrap();
        assert_eq!(r.status, "busy");
        assert_eq!(r.fence, 9);
        assert_eq!(r.holder.unwrap().token, Some(9));
        let long = "x".repeat(MAX_RECORD + 1);
        let r = reply(&s(&["busy", &long, "5", "4", "9"])).unwrap();
        assert_eq!(r.holder, None);
        assert!(reply(&s(&["busy", "", "5", "4"])).is_none());
        assert!(reply(&s(&["busy", "", "5", "4", "-1"])).is_none());
        assert!(reply(&s(&["busy", "", "x", "4", "1"])).is_none());
    }
}
