//! The adaptive throttle of `--throttle KEY` (client-side throttling, as in
//! the "Handling Overload" chapter of Google's SRE book), as pure
//! arithmetic on the counts the fleet shares. Over a sliding window, the
//! fleet counts its requests (every attempt it wanted to make, sent or
//! skipped) and the backend's accepts; each new attempt is skipped with
//! probability `max(0, (requests - K × accepts) / (requests + 1))`. While
//! the backend accepts more than one request in K, nothing is skipped; when
//! it accepts fewer, the fleet sends about K times what it accepts (and at
//! least about one request a window, to see it recover).
//!
//! The window is kept as `SLOTS` slots of a window's `SLOTS`th each, in a
//! ring: slot `i` holds the counts of one interval of time whose number
//! (the time divided by the slot's width) is `i` modulo `SLOTS`. The state
//! records the width it was made with: processes sharing a key count in the
//! width of the state while any of its slots is live, and a state with no
//! live slot takes the width of the process that writes it. Every count
//! read back is bounded; a slot in the future (a clock stepped back) is not
//! counted, and is replaced when its place in the ring comes round.

/// Slots in a window.
pub const SLOTS: usize = 12;

/// The largest count a slot holds; a state with a larger one is corrupt,
/// and a count that would pass it stays at it. Below 2^53, so that the Redis
/// store's script (whose numbers are doubles) counts exactly.
pub const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// The longest window accepted: 30 days.
pub const MAX_WINDOW_MS: u64 = 30 * 24 * 3_600_000;

/// The shortest window accepted: one second.
pub const MIN_WINDOW_MS: u64 = 1_000;

/// The largest K accepted, in thousandths.
pub const MAX_K_MILLI: u64 = 1_000_000;

/// The limits of a throttle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    /// The window, in milliseconds (`MIN_WINDOW_MS..=MAX_WINDOW_MS`).
    pub window_ms: u64,
    /// K, in thousandths (at least 1000: K below 1 would skip attempts of a
    /// backend that accepts them all).
    pub k_milli: u64,
}

/// One slot: the counts of one interval of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The interval's number: its start divided by the width.
    pub index: u64,
    /// Attempts the fleet wanted to make, sent or skipped.
    pub requests: u64,
    /// Of those, the attempts skipped.
    pub skips: u64,
    /// Attempts the backend accepted.
    pub accepts: u64,
}

/// The shared state of a throttle: the width of its slots, and the ring.
/// All zero: nothing counted yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// The width of a slot, in milliseconds; 0 in a fresh state.
    pub width_ms: u64,
    /// The ring of slots.
    pub slots: [Slot; SLOTS],
}

/// What a window counts at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Attempts wanted, sent or skipped.
    pub requests: u64,
    /// Attempts skipped.
    pub skips: u64,
    /// Attempts accepted.
    pub accepts: u64,
}

/// A decision on one attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Whether the attempt is sent.
    pub send: bool,
    /// The probability it was skipped with.
    pub probability: f64,
    /// The window's counts it was decided on (this attempt not counted).
    pub counts: Counts,
}

impl Slot {
    fn empty(self) -> bool {
        self == Slot::default()
    }
}

impl Window {
    /// The window, if it is one a store may hold: a width of a slot of an
    /// accepted window (0 only with every slot empty), every slot in its
    /// place in the ring, no count or interval number past `MAX_COUNT`, no more skips than
    /// requests. Anything else in a store is corrupt.
    pub fn checked(self) -> Option<Window> {
        let width_ok = if self.width_ms == 0 {
            self.slots.iter().all(|s| s.empty())
        } else {
            (1..=MAX_WINDOW_MS / SLOTS as u64).contains(&self.width_ms)
        };
        let slots_ok = self.slots.iter().enumerate().all(|(i, s)| {
            (s.empty() || s.index % SLOTS as u64 == i as u64)
                && s.index <= MAX_COUNT
                && s.requests <= MAX_COUNT
                && s.accepts <= MAX_COUNT
                && s.skips <= s.requests
        });
        (width_ok && slots_ok).then_some(self)
    }

    /// Whether `slot` counts at `now_ms` in slots of `width_ms`: it is
    /// the current interval or one of the `SLOTS - 1` before it.
    fn live(slot: Slot, width_ms: u64, now_ms: u64) -> bool {
        let now = now_ms / width_ms.max(1);
        !slot.empty() && slot.index <= now && now - slot.index < SLOTS as u64
    }

    /// The counts of the slots live at `now_ms`.
    pub fn counts(&self, now_ms: u64) -> Counts {
        let mut c = Counts::default();
        for s in self
            .slots
            .iter()
            .filter(|s| Self::live(**s, self.width_ms, now_ms))
        {
            c.requests = c.requests.saturating_add(s.requests);
            c.skips = c.skips.saturating_add(s.skips);
            c.accepts = c.accepts.saturating_add(s.accepts);
        }
        c
    }

    /// The width the window counts in at `now_ms`, for a process whose own
    /// slots are `own_ms` wide: the state's while a slot of it is live,
    /// else its own.
    pub fn width_at(&self, own_ms: u64, now_ms: u64) -> u64 {
        let live = self.width_ms != 0
            && self
                .slots
                .iter()
                .any(|s| Self::live(*s, self.width_ms, now_ms));
        if live { self.width_ms } else { own_ms }
    }

    /// The window with the slot of `now_ms` changed by `f`, in the width
    /// `width_at` says; slots of another width are dropped.
    fn with_slot(mut self, own_ms: u64, now_ms: u64, f: impl FnOnce(&mut Slot)) -> Window {
        let width = self.width_at(own_ms, now_ms);
        if width != self.width_ms {
            self = Window {
                width_ms: width,
                ..Window::default()
            };
        }
        let index = now_ms / width;
        // Below SLOTS: no truncation.
        #[allow(clippy::cast_possible_truncation)]
        let slot = &mut self.slots[(index % SLOTS as u64) as usize];
        if slot.index != index || slot.empty() {
            *slot = Slot {
                index,
                ..Slot::default()
            };
        }
        f(slot);
        self
    }
}

impl Throttle {
    /// The width of this throttle's slots.
    pub fn width_ms(self) -> u64 {
        (self.window_ms / SLOTS as u64).max(1)
    }

    /// K as a number.
    // Counts and K stay below 2^53 (`MAX_COUNT`, `MAX_K_MILLI`): exact.
    #[allow(clippy::cast_precision_loss)]
    pub fn k(self) -> f64 {
        self.k_milli as f64 / 1000.0
    }

    /// The probability of skipping an attempt, given the counts:
    /// `max(0, (requests - K × accepts) / (requests + 1))`, always below 1.
    /// The Redis store's script computes it with the same operations.
    #[allow(clippy::cast_precision_loss)]
    pub fn probability(self, c: Counts) -> f64 {
        let requests = c.requests as f64;
        let p = (requests - self.k() * c.accepts as f64) / (requests + 1.0);
        p.max(0.0)
    }

    /// Decides on an attempt at `now_ms`, where `draw` is a number drawn
    /// uniformly from [0, 1): the attempt is skipped when `draw` falls
    /// below the probability. The decision, and the window to store (the
    /// attempt counted as a request, and as a skip if it is one).
    pub fn admit(self, w: Window, now_ms: u64, draw: f64) -> (Decision, Window) {
        let counts = w.counts(now_ms);
        let probability = self.probability(counts);
        let send = draw >= probability;
        let after = w.with_slot(self.width_ms(), now_ms, |s| {
            s.requests = s.requests.saturating_add(1).min(MAX_COUNT);
            if !send {
                s.skips = s.skips.saturating_add(1).min(s.requests);
            }
        });
        (
            Decision {
                send,
                probability,
                counts,
            },
            after,
        )
    }

    /// Counts an accept at `now_ms`.
    pub fn accept(self, w: Window, now_ms: u64) -> Window {
        w.with_slot(self.width_ms(), now_ms, |s| {
            s.accepts = s.accepts.saturating_add(1).min(MAX_COUNT);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Throttle = Throttle {
        window_ms: 120_000,
        k_milli: 2000,
    };

    #[test]
    #[allow(clippy::float_cmp)]
    fn nothing_is_skipped_while_the_backend_accepts_more_than_one_in_k() {
        let c = |requests, accepts| Counts {
            requests,
            skips: 0,
            accepts,
        };
        assert_eq!(T.probability(c(0, 0)), 0.0);
        assert_eq!(T.probability(c(100, 50)), 0.0);
        assert_eq!(T.probability(c(100, 100)), 0.0);
        assert!((T.probability(c(99, 0)) - 0.99).abs() < 1e-12);
        assert!((T.probability(c(100, 20)) - 60.0 / 101.0).abs() < 1e-12);
        assert!(T.probability(c(MAX_COUNT, 0)) < 1.0 + f64::EPSILON);
    }

    #[test]
    fn a_window_forgets_what_is_older_than_it() {
        let mut w = Window::default();
        for t in 0..120u64 {
            w = T.admit(w, t * 1000, 0.99).1;
        }
        assert_eq!(w.counts(119_999).requests, 120);
        // A slot (10 s) later, the first slot has left the window.
        assert_eq!(w.counts(129_999).requests, 110);
        assert_eq!(w.counts(1_000_000).requests, 0);
        // A clock stepped back counts none of the slots in its future.
        assert_eq!(w.counts(5_000).requests, 10);
        assert_eq!(w.checked(), Some(w));
    }

    #[test]
    fn a_skip_is_a_request_and_an_accept_is_counted_apart() {
        let (d, w) = T.admit(Window::default(), 5, 0.5);
        assert!(d.send);
        let w = T.accept(w, 6);
        let all_rejected = Window {
            width_ms: 10_000,
            slots: {
                let mut s = [Slot::default(); SLOTS];
                s[0] = Slot {
                    index: 0,
                    requests: 9,
                    skips: 0,
                    accepts: 0,
                };
                s
            },
        };
        let (d, after) = T.admit(all_rejected, 7, 0.5);
        assert!(!d.send);
        assert!((d.probability - 0.9).abs() < 1e-12);
        assert_eq!(
            after.counts(7),
            Counts {
                requests: 10,
                skips: 1,
                accepts: 0
            }
        );
        assert_eq!(
            w.counts(7),
            Counts {
                requests: 1,
                skips: 0,
                accepts: 1
            }
        );
    }

    #[test]
    fn the_states_width_stands_while_it_counts_and_then_the_writers() {
        let short = Throttle {
            window_ms: 12_000,
            ..T
        };
        let (_, w) = T.admit(Window::default(), 1_000, 0.9);
        assert_eq!(w.width_ms, 10_000);
        let (_, w) = short.admit(w, 2_000, 0.9);
        assert_eq!((w.width_ms, w.counts(2_000).requests), (10_000, 2));
        let (_, w) = short.admit(w, 500_000, 0.9);
        assert_eq!((w.width_ms, w.counts(500_000).requests), (1_000, 1));
    }

    #[test]
    fn hostile_states_are_corrupt() {
        let one = |slot: Slot, at: usize, width_ms| {
            let mut w = Window {
                width_ms,
                ..Window::default()
            };
            w.slots[at] = slot;
            w.checked()
        };
        let s = Slot {
            index: 13,
            requests: 2,
            skips: 1,
            accepts: 5,
        };
        assert!(one(s, 1, 10).is_some());
        assert!(one(s, 2, 10).is_none());
        assert!(one(s, 1, 0).is_none());
        assert!(one(s, 1, MAX_WINDOW_MS).is_none());
        assert!(one(Slot { skips: 3, ..s }, 1, 10).is_none());
        assert!(
            one(
                Slot {
                    requests: MAX_COUNT + 1,
                    ..s
                },
                1,
                10
            )
            .is_none()
        );
        // Counts at their limit stay there.
        let full = Slot {
            index: 0,
            requests: MAX_COUNT,
            skips: MAX_COUNT,
            accepts: MAX_COUNT,
        };
        let w = one(full, 0, 10).unwrap_or_default();
        let (d, w) = T.admit(w, 1, 0.0);
        assert!(d.send);
        let w = T.accept(w, 1);
        assert_eq!(w.checked(), Some(w));
        assert_eq!(w.counts(1).requests, MAX_COUNT);
    }

    proptest::proptest! {
        #[test]
        fn any_checked_window_stays_one_a_store_may_hold(
            width in 0..=MAX_WINDOW_MS,
            slots in proptest::collection::vec(
                (proptest::prelude::any::<u64>(), 0..=MAX_COUNT, 0..=MAX_COUNT, 0..=MAX_COUNT),
                SLOTS,
            ),
            now in 0..crate::fleet::breaker::LATEST_MS,
            draw in 0.0f64..1.0,
        ) {
            let mut w = Window { width_ms: width, ..Window::default() };
            for (i, (index, requests, skips, accepts)) in slots.into_iter().enumerate() {
                let index = index % MAX_COUNT / SLOTS as u64 * SLOTS as u64 + i as u64;
                w.slots[i] = Slot { index, requests, skips: skips.min(requests), accepts };
            }
            if let Some(w) = w.checked() {
                let (d, after) = T.admit(w, now, draw);
                proptest::prop_assert!((0.0..1.0).contains(&d.probability));
                proptest::prop_assert_eq!(after.checked(), Some(after));
                let after = T.accept(after, now);
                proptest::prop_assert_eq!(after.checked(), Some(after));
            }
        }
    }
}
