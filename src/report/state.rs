//! What `backoff budget|breaker|throttle reset` says it did: what it
//! reset, and what was there, as one line of text or one JSON object
//! (`docs/schema/*-reset.json`). Nothing here touches a store.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::duration::human;
use crate::fleet::Found;
use crate::fleet::breaker::Circuit;
use crate::fleet::bucket::{Bucket, Level, show_tokens};
use crate::fleet::throttle::{Counts, SLOTS, Window};
use crate::report::json::{circuit_json, unix_ms};
use crate::report::text::circuit_text;

/// A reset, told: its line (without `backoff: `), and its JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    /// The line of text.
    pub line: String,
    /// The JSON object.
    pub json: Value,
}

/// The JSON object of a reset of `key` in `store` that found `found`:
/// `before` and `after` made of the state found and the state written
/// (none when nothing was).
fn reset_json<T>(
    key: &str,
    store: &str,
    found: &Found<T>,
    before: impl FnOnce(&T) -> Value,
    after: Value,
) -> Value {
    let (before, after) = match found {
        Found::Nothing => (Value::Null, Value::Null),
        Found::Corrupt => (Value::Null, after),
        Found::Held(t) => (before(t), after),
    };
    json!({
        "key": key,
        "store": store,
        "found": found.name(),
        "before": before,
        "after": after,
    })
}

/// The line of a reset of the `noun` `key` that found `found`: reset to
/// `after`, and what it held (`held`: what a state it found says).
fn reset_line<T>(
    noun: &str,
    key: &str,
    found: &Found<T>,
    after: &str,
    held: impl FnOnce(&T) -> String,
    without: &str,
) -> String {
    match found {
        Found::Nothing => format!("{noun} '{key}': no state to reset ({without})"),
        Found::Corrupt => format!("{noun} '{key}' reset to {after}; it held a corrupt state"),
        Found::Held(t) => format!("{noun} '{key}' reset to {after}; it {}", held(t)),
    }
}

/// Tokens in millionths as a JSON number: `3.2`.
fn tokens(micros: u64) -> Value {
    json!(show_tokens(micros).parse::<f64>().unwrap_or(0.0))
}

/// A budget's state in JSON: its tokens, and the bucket it records (null
/// for none).
fn level_json(level: Level) -> Value {
    json!({
        "tokens": tokens(level.micros),
        "micro_tokens": level.micros,
        "burst": level.made.map_or(Value::Null, |b| tokens(b.burst)),
        "ratio": level.made.map_or(Value::Null, |b| tokens(b.ratio)),
    })
}

/// `budget reset KEY`: the budget in `store` found `found`, and filled as
/// `bucket` (unless it found nothing). The ratio is said where the reset
/// changed it, and the burst a state recorded where it changed.
pub fn budget_reset(key: &str, store: &str, found: Found<Level>, bucket: Bucket) -> Told {
    let made = match found {
        Found::Held(level) => level.made,
        _ => None,
    };
    let ratio_changed = made.is_some_and(|m| m.ratio != bucket.ratio);
    let mut after = format!("{} tokens", show_tokens(bucket.burst));
    if ratio_changed {
        let _ = write!(after, ", {} a success", show_tokens(bucket.ratio));
    }
    let held = |level: &Level| {
        let mut text = format!("held {}", show_tokens(level.micros));
        if let Some(m) = level.made.filter(|m| m.burst != bucket.burst) {
            let _ = write!(text, " of {}", show_tokens(m.burst));
        }
        if let Some(m) = level.made.filter(|_| ratio_changed) {
            let _ = write!(text, ", {} a success", show_tokens(m.ratio));
        }
        text
    };
    let full = Level {
        micros: bucket.burst,
        made: Some(bucket),
    };
    Told {
        line: reset_line(
            "budget",
            key,
            &found,
            &after,
            held,
            "a budget without one is full",
        ),
        json: reset_json(key, store, &found, |l| level_json(*l), level_json(full)),
    }
}

/// A circuit in JSON, as `breaker show` gives it.
fn circuit_at(c: Circuit, now_ms: u64) -> Value {
    let mut v = circuit_json(c, now_ms);
    v["probe_until"] = unix_ms(c.probe_until_ms);
    v
}

/// `breaker reset KEY`: the circuit in `store` found `found` at `now_ms`,
/// and closed it (unless it found nothing).
pub fn breaker_reset(key: &str, store: &str, found: Found<Circuit>, now_ms: u64) -> Told {
    let held = |c: &Circuit| format!("was {}", circuit_text(*c, now_ms));
    Told {
        line: reset_line(
            "breaker",
            key,
            &found,
            "closed",
            held,
            "a circuit without one is closed",
        ),
        json: reset_json(
            key,
            store,
            &found,
            |c| circuit_at(*c, now_ms),
            circuit_at(Circuit::default(), now_ms),
        ),
    }
}

/// `N requests in the last 2m (S skipped), A accepted`: a throttle's counts
/// over a window of `window_ms`.
pub fn counts_text(counts: Counts, window_ms: u64) -> String {
    format!(
        "{} in the last {} ({} skipped), {} accepted",
        super::text::plural(counts.requests, "request"),
        humantime::format_duration(Duration::from_millis(window_ms)),
        counts.skips,
        counts.accepts,
    )
}

/// A throttle's window in JSON: its counts at `now_ms`, and how long it is
/// (null when none of its slots counts any more).
fn window_json(w: &Window, now_ms: u64) -> Value {
    let counts = w.counts(now_ms);
    let width = w.width_at(0, now_ms);
    json!({
        "requests": counts.requests,
        "skips": counts.skips,
        "accepts": counts.accepts,
        "window_seconds": if width == 0 {
            Value::Null
        } else {
            json!(Duration::from_millis(width.saturating_mul(SLOTS as u64)).as_secs_f64())
        },
    })
}

/// `throttle reset KEY`: the window in `store` found `found` at `now_ms`,
/// and emptied it (unless it found nothing).
pub fn throttle_reset(key: &str, store: &str, found: Found<Window>, now_ms: u64) -> Told {
    let held = |w: &Window| {
        let width = w.width_at(0, now_ms);
        if width == 0 {
            "held nothing that still counts".to_owned()
        } else {
            let window_ms = width.saturating_mul(SLOTS as u64);
            format!("held {}", counts_text(w.counts(now_ms), window_ms))
        }
    };
    Told {
        line: reset_line(
            "throttle",
            key,
            &found,
            "an empty window",
            held,
            "a window without one is empty",
        ),
        json: reset_json(
            key,
            store,
            &found,
            |w| window_json(w, now_ms),
            window_json(&Window::default(), now_ms),
        ),
    }
}

/// `backoff lock show`: the line (on stdout) and the JSON object.
pub fn lock_show(key: &str, store: &str, state: &crate::fleet::lock::LockState) -> Told {
    let lease = state
        .lease_left
        .map(|left| format!("; its lease ends in {} unless renewed", human(left)))
        .unwrap_or_default();
    let line = match (&state.holder, state.held, &state.corrupt) {
        (_, _, Some(why)) => format!(
            "{key}: corrupt: the lock key {why}; no run takes the lock until backoff lock reset {key} repairs it ({store})"
        ),
        (Some(h), true, None) => format!(
            "{key}: held by {} ({store}){lease}",
            super::text::holder_text(h)
        ),
        (None, true, None) => {
            format!("{key}: held, by a run whose record cannot be read ({store}){lease}")
        }
        (Some(h), false, None) => format!(
            "{key}: free; last held by {}, which ended without letting go ({store})",
            super::text::holder_text(h)
        ),
        (None, false, None) => format!("{key}: free ({store})"),
    };
    Told {
        line: format!("{line}{}", slots_text(&state.slots)),
        json: json!({
            "key": key,
            "held": state.held,
            "holder": super::json::holder_json(state.holder.as_ref()),
            "store": store,
            "lease_left_seconds": state.lease_left.map(|d| d.as_secs_f64()),
            "corrupt": state.corrupt,
            "slots": slots_json(&state.slots),
        }),
    }
}

/// The slots of `--lock-limit` that hold anything, after a lock's line:
/// `; --lock-limit slots: 1 held by …, 2 free`.
fn slots_text(slots: &[crate::fleet::lock::LockState]) -> String {
    if slots.is_empty() {
        return String::new();
    }
    let each: Vec<String> = slots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let what = match (&s.holder, s.held, &s.corrupt) {
                (_, _, Some(why)) => format!("corrupt ({why})"),
                (Some(h), true, None) => format!("held by {}", super::text::holder_text(h)),
                (None, true, None) => "held".to_owned(),
                (_, false, None) => "free".to_owned(),
            };
            format!("{} {what}", i + 1)
        })
        .collect();
    format!("; --lock-limit slots: {}", each.join(", "))
}

/// The slots of `--lock-limit`, in JSON.
fn slots_json(slots: &[crate::fleet::lock::LockState]) -> Value {
    slots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "slot": i + 1,
                "held": s.held,
                "holder": super::json::holder_json(s.holder.as_ref()),
                "lease_left_seconds": s.lease_left.map(|d| d.as_secs_f64()),
                "corrupt": s.corrupt,
            })
        })
        .collect()
}

/// `backoff lock reset`: what it found and did.
pub fn lock_reset(key: &str, store: &str, state: &crate::fleet::lock::LockState) -> Told {
    let line = match (&state.holder, state.held, &state.corrupt) {
        (_, _, Some(why)) => format!(
            "lock '{key}' was corrupt (the lock key {why}): it is removed, and the next run to take the lock first waits as after a loss of the store's data"
        ),
        (holder, true, None) => format!(
            "lock '{key}' removed although held{}: the holder ends its attempt and gives up (lock_lost) once it sees it gone, within a second for a file and at its next renewal for a lease in Redis; the next run takes the lock once that holder has ended (for a lease, once the lease removed would have run out)",
            holder
                .as_ref()
                .map(|h| format!(" by {}", super::text::holder_text(h)))
                .unwrap_or_default()
        ),
        (Some(h), false, None) => format!(
            "lock '{key}' was free; the record its last holder left ({}) is cleared",
            super::text::holder_text(h)
        ),
        (None, false, None) => format!("lock '{key}' was free; nothing to reset"),
    };
    let mut json = json!({
        "key": key,
        "store": store,
        "found": match (state.held, state.holder.is_some(), &state.corrupt) {
            (_, _, Some(_)) => "corrupt",
            (true, _, None) => "held",
            (false, true, None) => "record",
            (false, false, None) => "nothing",
        },
        "holder": super::json::holder_json(state.holder.as_ref()),
    });
    if let Some(why) = &state.corrupt {
        json["why"] = json!(why);
    }
    json["slots"] = slots_json(&state.slots);
    Told {
        line: format!("{line}{}", slots_text(&state.slots)),
        json,
    }
}

/// `backoff once show`: the line (on stdout) and the JSON object.
pub fn once_show(
    key: &str,
    store: &str,
    stored: &crate::fleet::once::Stored,
    period: Option<crate::fleet::once::Period>,
    now_ms: u64,
) -> Told {
    use crate::fleet::once::Stored;
    use crate::fleet::once::decide;
    // The local zone's offset from UTC at a time in Unix milliseconds.
    let offset_at = |ms: u64| {
        crate::sys::localtime::utc_offset(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
        )
    };
    let last = match stored {
        Stored::Record(s) => Some(s),
        _ => None,
    };
    let current = period.map(|p| (p, p.label(now_ms, offset_at(now_ms).unwrap_or(0))));
    let done = period.map(|p| !decide(p, last, now_ms, offset_at).runs());
    let then = match (&current, done) {
        (Some((_, label)), Some(true)) => format!("; {label} is done: a run now skips"),
        (Some((_, label)), _) => format!("; {label} is not done: a run now does the job"),
        (None, _) => String::new(),
    };
    let line = match stored {
        Stored::Nothing => format!("{key}: no success recorded{then} ({store})"),
        Stored::Record(s) => format!(
            "{key}: last success for {} {}{then} ({store})",
            s.period,
            super::text::success_text(s)
        ),
        Stored::Hostile(why) => format!(
            "{key}: no record to believe ({why}): a run does the job, and its success replaces it ({store})"
        ),
    };
    Told {
        line,
        json: json!({
            "key": key,
            "store": store,
            "last": super::json::success_json(last),
            "corrupt": match stored {
                Stored::Hostile(why) => json!(why),
                _ => Value::Null,
            },
            "period": current.map(|(_, label)| label),
            "done": done,
        }),
    }
}

/// `backoff once reset`: what it found and removed.
pub fn once_reset(key: &str, store: &str, stored: &crate::fleet::once::Stored) -> Told {
    use crate::fleet::once::Stored;
    let (line, found) = match stored {
        Stored::Nothing => (
            format!("once-per '{key}': no success was recorded; nothing to reset"),
            "nothing",
        ),
        Stored::Record(s) => (
            format!(
                "once-per '{key}': the record of its last success (for {}, {}) is removed: the next run does the job",
                s.period,
                super::text::success_text(s)
            ),
            "record",
        ),
        Stored::Hostile(why) => (
            format!("once-per '{key}': what was in its place ({why}) is removed"),
            "corrupt",
        ),
    };
    let last = match stored {
        Stored::Record(s) => Some(s),
        _ => None,
    };
    Told {
        line,
        json: json!({
            "key": key,
            "store": store,
            "found": found,
            "last": super::json::success_json(last),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::bucket::UNIT;
    use crate::fleet::throttle::Slot;

    const BUCKET: Bucket = Bucket {
        burst: 10 * UNIT,
        ratio: UNIT / 10,
    };

    #[test]
    fn a_budget_reset_says_what_it_held_and_what_it_changed() {
        let held = |micros, made| Found::Held(Level { micros, made });
        let told = budget_reset("api", "s", held(3_200_000, Some(BUCKET)), BUCKET);
        assert_eq!(told.line, "budget 'api' reset to 10 tokens; it held 3.2");
        assert_eq!(told.json["found"], "state");
        assert_eq!(told.json["before"]["tokens"], 3.2);
        assert_eq!(told.json["after"]["tokens"], 10.0);
        assert_eq!(told.json["after"]["burst"], 10.0);
        let bigger = Bucket {
            burst: 20 * UNIT,
            ratio: UNIT / 2,
        };
        let told = budget_reset("api", "s", held(UNIT, Some(BUCKET)), bigger);
        assert_eq!(
            told.line,
            "budget 'api' reset to 20 tokens, 0.5 a success; it held 1 of 10, 0.1 a success"
        );
        let told = budget_reset("api", "s", held(UNIT, None), BUCKET);
        assert_eq!(told.line, "budget 'api' reset to 10 tokens; it held 1");
        assert_eq!(told.json["before"]["burst"], Value::Null);
        let told = budget_reset("api", "s", Found::Corrupt, BUCKET);
        assert_eq!(
            told.line,
            "budget 'api' reset to 10 tokens; it held a corrupt state"
        );
        assert_eq!(told.json["before"], Value::Null);
        assert_eq!(told.json["after"]["tokens"], 10.0);
        let told = budget_reset("api", "s", Found::Nothing, BUCKET);
        assert_eq!(
            told.line,
            "budget 'api': no state to reset (a budget without one is full)"
        );
        assert_eq!(told.json["found"], "nothing");
        assert_eq!(told.json["after"], Value::Null);
    }

    #[test]
    fn a_throttle_reset_says_the_counts_it_emptied() {
        let now = 1_000_000_000;
        let mut w = Window {
            width_ms: 10_000,
            ..Window::default()
        };
        w.slots[0] = Slot {
            index: now / 10_000,
            requests: 12,
            skips: 3,
            accepts: 5,
        };
        let told = throttle_reset("api", "s", Found::Held(w), now);
        assert_eq!(
            told.line,
            "throttle 'api' reset to an empty window; it held 12 requests in the last 2m (3 skipped), 5 accepted"
        );
        let one = Counts {
            requests: 1,
            skips: 0,
            accepts: 1,
        };
        assert_eq!(
            counts_text(one, 120_000),
            "1 request in the last 2m (0 skipped), 1 accepted"
        );
        assert_eq!(told.json["before"]["requests"], 12);
        assert_eq!(told.json["before"]["window_seconds"], 120.0);
        assert_eq!(told.json["after"]["requests"], 0);
        // Counts that no longer count.
        let told = throttle_reset("api", "s", Found::Held(w), now + 10_000_000);
        assert_eq!(
            told.line,
            "throttle 'api' reset to an empty window; it held nothing that still counts"
        );
        assert_eq!(told.json["before"]["window_seconds"], Value::Null);
    }

    #[test]
    fn a_breaker_reset_says_the_circuit_it_closed() {
        let told = breaker_reset("api", "s", Found::Held(Circuit::default()), 5);
        assert_eq!(told.line, "breaker 'api' reset to closed; it was closed");
        assert_eq!(told.json["before"]["state"], "closed");
        assert_eq!(told.json["after"]["state"], "closed");
        let told = breaker_reset("api", "s", Found::Nothing, 5);
        assert_eq!(
            told.line,
            "breaker 'api': no state to reset (a circuit without one is closed)"
        );
    }
}
