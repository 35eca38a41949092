//! `--once-per` for a fleet: the record of the job's last success in
//! Redis (or a Redis Cluster), a string `backoff:once:KEY`, read and
//! written by the run that holds the job's lease (`redis_lock`), on the
//! server's clock (`TIME`): every host decides the period by the same
//! clock, whatever its own says.
//!
//! One Lua script reads (at most a record's length: a key of another
//! type, a value too long or with bytes no record has, is told for what
//! it is and never sent), writes (the record with `done` at the server's
//! time; a key of another type is replaced) and resets. The key never
//! expires: a record is one small string per job, and the job's period
//! may be a year.

use std::time::Duration;

use crate::fleet::once::{MAX_RECORD, Period, Success};
use crate::run::Wait;
use crate::store::redis::{Lua, Server};
use crate::store::{Backend, StoreError};
use crate::store::{OnceBackend, Stored};

/// The namespace of once-per keys in Redis.
pub const REDIS_ONCE_PREFIX: &str = "backoff:once:";

/// The record's script. KEYS[1]: the record. ARGV: operation (read,
/// write, reset), and for a write the record's parts before and after
/// `done` (see `Success::head` and `tail`), and the call's expiry.
/// Returns {status, text, now}: status `none`, `record` (text: the
/// record), `type` (text: the key's type), `long` (text: its length) or
/// `garbage`; for a write `written` and the record written; `now` the
/// server's time in Unix milliseconds.
const ONCE_SCRIPT: &str = r"
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function n(x) return string.format('%.0f', x) end
local op = ARGV[1]
if op == 'write' then
  local record = ARGV[2] .. ' done ' .. n(now) .. ' ' .. ARGV[3]
  redis.call('SET', KEYS[1], record)
  return {'written', record, n(now)}
end
local kind = redis.call('TYPE', KEYS[1]).ok
local status, text = 'none', ''
if kind == 'string' then
  local len = redis.call('STRLEN', KEYS[1])
  if len > 512 then
    status, text = 'long', n(len)
  else
    text = redis.call('GET', KEYS[1])
    if string.match(text, '^[%w%.%-_:%? ]*$') then
      status = 'record'
    else
      status, text = 'garbage', ''
    end
  end
elseif kind ~= 'none' then
  status, text = 'type', kind
end
if op == 'reset' and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
end
return {status, text, n(now)}
";

/// A once-per record kept in Redis.
pub struct RedisOnce {
    server: std::rc::Rc<Server>,
    key: String,
    period: Period,
    timeout: Duration,
    script: Lua,
}

impl std::fmt::Debug for RedisOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOnce")
            .field("url", &self.server.url())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisOnce {
    /// The record of `key` at `url`, deciding on `period`; each call waits
    /// at most `timeout`. Checks the URL only.
    ///
    /// # Errors
    ///
    /// When the URL is not a usable Redis URL.
    pub fn new(
        url: &str,
        key: &str,
        period: Period,
        timeout: Duration,
    ) -> Result<RedisOnce, String> {
        Ok(RedisOnce {
            server: Server::shared(url)?,
            key: format!("{REDIS_ONCE_PREFIX}{key}"),
            period,
            timeout,
            script: Lua::decision(ONCE_SCRIPT),
        })
    }

    /// Calls the script: its status, text and time.
    fn call(&self, args: Vec<String>, wait: &mut dyn Wait) -> Result<Reply, StoreError> {
        let answer = self
            .server
            .call(&self.script, &self.key, args, self.timeout, wait)?;
        reply(&answer)
            .ok_or_else(|| StoreError::Failed("unexpected reply from the once-per script".into()))
    }

    /// What a read or a reset found.
    fn stored(&self, r: &Reply) -> Stored {
        let what = match r.status.as_str() {
            "none" => return Stored::Nothing,
            "record" => match Success::parse(r.text.as_bytes()) {
                Some(s) => return Stored::Record(s),
                None => "holds no record".to_owned(),
            },
            "type" => format!("is a {}, not a string", r.text),
            "long" => format!("holds {} bytes, more than {MAX_RECORD}", r.text),
            _ => "holds bytes that no record has".to_owned(),
        };
        Stored::Hostile(format!("{} {what}", self.key))
    }
}

/// What the script answered.
struct Reply {
    status: String,
    text: String,
    now_ms: u64,
}

/// Reads the script's reply, the text within a record's bounds.
fn reply(answer: &[String]) -> Option<Reply> {
    let [status, text, now] = answer else {
        return None;
    };
    Some(Reply {
        status: status.clone(),
        text: text.chars().take(MAX_RECORD + 1).collect(),
        now_ms: now.parse().ok()?,
    })
}

impl Backend for RedisOnce {
    fn describe(&self) -> String {
        format!("{} key {}", self.server.url(), self.key)
    }

    fn server(&self) -> Option<String> {
        Some(self.server.url())
    }
}

impl OnceBackend for RedisOnce {
    fn period(&self) -> Period {
        self.period
    }

    fn clocked(&self) -> bool {
        true
    }

    fn read(&self, wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError> {
        let r = self.call(vec!["read".into()], wait)?;
        Ok((self.stored(&r), r.now_ms))
    }

    fn write(&self, success: &Success, wait: &mut dyn Wait) -> Result<Success, StoreError> {
        let r = self.call(vec!["write".into(), success.head(), success.tail()], wait)?;
        Success::parse(r.text.as_bytes())
            .filter(|_| r.status == "written")
            .ok_or_else(|| StoreError::Failed("unexpected reply from the once-per script".into()))
    }

    fn reset(&self, wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError> {
        let r = self.call(vec!["reset".into()], wait)?;
        Ok((self.stored(&r), r.now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_within_bounds() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let r = reply(&s(&["record", &"x".repeat(5000), "17"])).unwrap();
        assert_eq!((r.text.len(), r.now_ms), (MAX_RECORD + 1, 17));
        assert!(reply(&s(&["record", "", "x"])).is_none());
        assert!(reply(&s(&["record", ""])).is_none());
    }
}
