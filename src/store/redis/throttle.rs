//! Adaptive throttles kept in Redis: the throttle's script, run atomically
//! on the window's key on the server's clock, and what it answers.

use std::rc::Rc;
use std::time::Duration;

use crate::duration::human;
use crate::fleet::breaker::LATEST_MS;
use crate::fleet::throttle::{
    Counts, Decision, MAX_COUNT, MAX_K_MILLI, MAX_WINDOW_MS, MIN_WINDOW_MS, SLOTS, Slot, Throttle,
    Window,
};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::{Backend as StoreBackend, FailMode, Found, StoreError, ThrottleBackend};

use crate::store::redis::{Lua, REDIS_IDLE_TTL, Server};

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
