//! An adaptive throttle kept in a file (`KEY.throttle`): its fixed-length
//! record, and the throttle's decisions made on it under the file's lock.

use std::time::Duration;

use crate::fleet::bucket::check_key;
use crate::fleet::throttle::{self, SLOTS, Slot, Throttle, Window};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::file::{Access, Record, State, StateDir, StateFile, found, now_ms, number};
use crate::store::{Backend, FailMode, Found, StoreError, ThrottleBackend};

/// The throttle file's only line, fixed in length like the budget's: the
/// width of a slot, then each slot's interval number, requests, skips and
/// accepts, in the ring's order.
fn throttle_record(w: &Window) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(THROTTLE_LEN);
    let _ = write!(text, "backoff-throttle v1 width {:020} slots", w.width_ms);
    for s in w.slots {
        let _ = write!(
            text,
            " {:020} {:020} {:020} {:020}",
            s.index, s.requests, s.skips, s.accepts
        );
    }
    text.push('\n');
    text
}

/// The length of a throttle record: a header of 52 bytes, 84 a slot, and
/// the newline.
const THROTTLE_LEN: usize = 52 + SLOTS * 84 + 1;

/// Parses a throttle record; `None` if it is not exactly one of a window a
/// store may hold (`Window::checked`).
fn parse_throttle(text: &[u8]) -> Option<Window> {
    let rest = text
        .strip_prefix(b"backoff-throttle v1 width ")?
        .strip_suffix(b"\n")?;
    let (width, rest) = rest.split_at_checked(20)?;
    let mut rest = rest.strip_prefix(b" slots")?;
    let mut field = || -> Option<u64> {
        let (digits, after) = rest.strip_prefix(b" ")?.split_at_checked(20)?;
        rest = after;
        number(digits)
    };
    let mut slots = [Slot::default(); SLOTS];
    for slot in &mut slots {
        *slot = Slot {
            index: field()?,
            requests: field()?,
            skips: field()?,
            accepts: field()?,
        };
    }
    if !rest.is_empty() {
        return None;
    }
    Window {
        width_ms: number(width)?,
        slots,
    }
    .checked()
}

impl Record for Window {
    const KIND: &'static str = "throttle";
    const LEN: usize = THROTTLE_LEN;
    fn write(self) -> String {
        throttle_record(&self)
    }
    fn read(text: &[u8]) -> Option<Window> {
        parse_throttle(text)
    }
}

/// An adaptive throttle kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileThrottle {
    file: StateFile,
    key: String,
    throttle: Throttle,
    fail: FailMode,
    warnings: Warnings,
}

impl Backend for FileThrottle {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl FileThrottle {
    /// The throttle `key` in `dir`, as `FileBudget::open` opens a budget: a
    /// corrupt state becomes a fresh window (open), or is left alone and
    /// the store counts as unavailable (closed).
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        throttle: Throttle,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<FileThrottle, String> {
        check_key(key)?;
        Ok(FileThrottle {
            file: StateFile::new(dir, key, Window::KIND, timeout),
            key: key.to_owned(),
            throttle,
            fail,
            warnings,
        })
    }

    fn window_of(&self, state: State<Window>) -> Result<Window, StoreError> {
        match state {
            State::Fresh => Ok(Window::default()),
            State::Held(w) => Ok(w),
            State::Corrupt(why) if self.fail == FailMode::Open => {
                self.warnings
                    .warn(&format!("adaptive throttle {why}; starting a fresh window"));
                Ok(Window::default())
            }
            State::Corrupt(why) => Err(StoreError::Failed(why)),
        }
    }
}

impl ThrottleBackend for FileThrottle {
    /// Decides on an attempt, where `draw` is uniform in [0, 1), and counts
    /// it: the decision, and the window its counts cover, in milliseconds.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used, or a signal ends the wait.
    fn admit(
        &self,
        draw: f64,
        wait: &mut dyn Wait,
    ) -> Result<(throttle::Decision, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.window_of(state)?;
            let (decision, after) = this.throttle.admit(before, now_ms(), draw);
            let window_ms = this.throttle.window_of(after.width_ms);
            Ok((Some(after), (decision, window_ms)))
        })
    }

    /// Counts an attempt the backend accepted.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn accept(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.window_of(state)?;
            Ok((Some(this.throttle.accept(before, now_ms())), ()))
        })
    }

    /// The window as stored, and the time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used or is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Window, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(
            Access::Look,
            wait,
            move |state: State<Window>| match state {
                State::Fresh => Ok((None, (Window::default(), now_ms()))),
                State::Held(w) => Ok((None, (w, now_ms()))),
                State::Corrupt(why) => Err(StoreError::Failed(format!(
                    "{why}; 'backoff throttle reset {}' with the same --budget-dir repairs it",
                    this.key
                ))),
            },
        )
    }

    /// Empties the window, whatever the state file held (a corrupt state
    /// included): what it found, and the time. No state file is left as it
    /// is (none is made: a window without a state is empty).
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Window>, u64), StoreError> {
        self.file
            .with_state(Access::Rewrite, wait, |state: State<Window>| {
                let found = found(state);
                let empty = (found != Found::Nothing).then(Window::default);
                Ok((empty, (found, now_ms())))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A window of every kind of slot: counts at their limits, one of each
    /// count, an empty one.
    fn full_window() -> Window {
        let mut w = Window {
            width_ms: throttle::MAX_WINDOW_MS / SLOTS as u64,
            ..Window::default()
        };
        let max = throttle::MAX_COUNT;
        w.slots[0] = Slot {
            index: max / SLOTS as u64 * SLOTS as u64,
            requests: max,
            skips: max,
            accepts: max,
        };
        w.slots[5] = Slot {
            index: 17,
            requests: 1,
            skips: 0,
            accepts: 0,
        };
        w.slots[11] = Slot {
            index: 11,
            requests: 3,
            skips: 2,
            accepts: 1,
        };
        w
    }

    #[test]
    fn throttle_records_round_trip_and_anything_else_is_corrupt() {
        let t = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let (_, made) = t.admit(Window::default(), 1_796_144_602_783, 0.5);
        for w in [
            Window::default(),
            full_window(),
            t.accept(made, 1_796_144_602_784),
        ] {
            let text = throttle_record(&w);
            assert_eq!(text.len(), THROTTLE_LEN);
            assert_eq!(text.lines().count(), 1);
            assert_eq!(parse_throttle(text.as_bytes()), Some(w));
            assert_eq!(w.write(), text);
        }
        let good = throttle_record(&full_window());
        let zeros = "0".repeat(20);
        // The fields of slot 11: the last 4 × 21 bytes before the newline.
        let last = THROTTLE_LEN - 1 - 4 * 21;
        let in_slot_11 = |field: usize, value: &str| {
            let at = last + field * 21 + 1;
            format!("{}{value}{}", &good[..at], &good[at + 20..])
        };
        for bad in [
            String::new(),
            good.replace("v1", "v2"),
            good.replace(" slots ", " slots  "),
            good.trim_end().to_owned(),
            format!("{good}\n"),
            good.replacen(" 0", " x", 1),
            good.replacen(" 0", " -", 1),
            good.replacen(" 0", " +", 1),
            good.replacen(" 0", "  ", 1),
            // A width of no window, or of one past the longest.
            good.replace("width 00000000000216000000", &format!("width {zeros}")),
            good.replace("width 00000000000216000000", "width 00000000000216000001"),
            // A slot out of its place in the ring.
            in_slot_11(0, "00000000000000000012"),
            // Counts past the largest, more skips than requests, an index
            // past the largest, a number past 64 bits.
            in_slot_11(1, "00001000000000000001"),
            in_slot_11(3, "00001000000000000001"),
            in_slot_11(2, "00000000000000000004"),
            in_slot_11(0, "01000000000000000007"),
            in_slot_11(1, "99999999999999999999"),
            in_slot_11(1, &u64::MAX.to_string()),
        ] {
            assert_eq!(parse_throttle(bad.as_bytes()), None, "{bad:?}");
        }
        // Of the right length, so that only the parse refuses them.
        assert_eq!(in_slot_11(2, "00000000000000000004").len(), THROTTLE_LEN);
    }

    /// A throttle of a 2m window and K 2 in a fresh directory, with its
    /// fail mode.
    fn file_throttle(dir: &Path, fail: FailMode) -> Result<FileThrottle, String> {
        let t = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let timeout = Duration::from_secs(10);
        FileThrottle::open(
            StateDir::Given(dir.into()),
            "t",
            t,
            timeout,
            fail,
            Warnings::default(),
        )
    }

    /// A result whose error is told as text, for a test that returns it.
    trait Said<T> {
        fn said(self) -> Result<T, String>;
    }

    impl<T, E: std::fmt::Display> Said<T> for Result<T, E> {
        fn said(self) -> Result<T, String> {
            self.map_err(|e| e.to_string())
        }
    }

    #[test]
    fn a_file_throttle_counts_requests_skips_and_accepts() -> Result<(), String> {
        let dir = tempfile::tempdir().said()?;
        let store = dir.path().join("store");
        let t = file_throttle(&store, FailMode::Open)?;
        let wait = &mut crate::store::Unwatched;
        let (shown, _) = t.show(wait).said()?;
        assert_eq!(shown, Window::default());
        assert!(!store.exists(), "show creates nothing");
        // Skipped with (requests - 2 × accepts) / (requests + 1): 0, 1/2,
        // then 2/3, which a draw of a half falls below.
        let mut sent = Vec::new();
        for _ in 0..3 {
            let (d, window_ms) = t.admit(0.5, wait).said()?;
            assert_eq!(window_ms, 120_000);
            sent.push((d.send, d.counts.requests));
        }
        assert_eq!(sent, [(true, 0), (true, 1), (false, 2)]);
        t.accept(wait).said()?;
        let (w, now) = t.show(wait).said()?;
        let c = w.counts(now);
        assert_eq!((c.requests, c.skips, c.accepts), (3, 1, 1));
        assert_eq!(w.width_ms, 10_000);
        let text = std::fs::read(store.join("t.throttle")).said()?;
        assert_eq!(parse_throttle(&text), Some(w));
        t.reset(wait).said()?;
        assert_eq!(t.show(wait).said()?.0, Window::default());
        Ok(())
    }

    #[test]
    fn a_corrupt_throttle_file_is_a_fresh_window_or_left_alone() -> Result<(), String> {
        let dir = tempfile::tempdir().said()?;
        let file = dir.path().join("t.throttle");
        let wait = &mut crate::store::Unwatched;
        std::fs::write(&file, "garbage\n").said()?;
        let closed = file_throttle(dir.path(), FailMode::Closed)?;
        let refused = closed.admit(0.5, wait).err().ok_or("no error")?;
        assert!(
            matches!(&refused, StoreError::Failed(why) if why.contains("is corrupt (8 bytes, where a throttle state has 1061)")),
            "{refused}"
        );
        assert!(closed.accept(wait).is_err());
        assert_eq!(std::fs::read(&file).said()?, b"garbage\n", "left alone");
        let shown = closed.show(wait).err().ok_or("no error")?.to_string();
        assert!(
            shown.ends_with("; 'backoff throttle reset t' with the same --budget-dir repairs it"),
            "{shown}"
        );
        let open = file_throttle(dir.path(), FailMode::Open)?;
        let (d, _) = open.admit(0.5, wait).said()?;
        assert!(d.send);
        assert_eq!(d.counts.requests, 0, "a fresh window");
        let (w, now) = open.show(wait).said()?;
        assert_eq!(w.counts(now).requests, 1);
        std::fs::write(&file, "garbage\n").said()?;
        closed.reset(wait).said()?;
        assert_eq!(closed.show(wait).said()?.0, Window::default());
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_in_a_throttle_record_make_a_state_or_corrupt(
            changes in proptest::collection::vec(
                (0..THROTTLE_LEN, proptest::prelude::any::<u8>()),
                1..8,
            ),
        ) {
            let mut text = throttle_record(&full_window()).into_bytes();
            for (at, byte) in changes {
                text[at] = byte;
            }
            if let Some(w) = parse_throttle(&text) {
                proptest::prop_assert_eq!(w.checked(), Some(w));
                proptest::prop_assert_eq!(throttle_record(&w).into_bytes(), text);
            }
        }

        #[test]
        fn any_throttle_record_is_read_back_only_when_a_store_may_hold_it(
            width in proptest::prop_oneof![
                proptest::prelude::any::<u64>(),
                0..=throttle::MAX_WINDOW_MS / SLOTS as u64 + 1,
            ],
            slots in proptest::collection::vec(
                proptest::array::uniform4(proptest::prop_oneof![
                    proptest::prelude::any::<u64>(),
                    0..=throttle::MAX_COUNT + 1,
                    0..30u64,
                ]),
                SLOTS,
            ),
        ) {
            let mut text = format!("backoff-throttle v1 width {width:020} slots");
            let mut w = Window { width_ms: width, ..Window::default() };
            for (i, [index, requests, skips, accepts]) in slots.into_iter().enumerate() {
                let _ = std::fmt::Write::write_fmt(
                    &mut text,
                    format_args!(" {index:020} {requests:020} {skips:020} {accepts:020}"),
                );
                w.slots[i] = Slot { index, requests, skips, accepts };
            }
            text.push('\n');
            proptest::prop_assert_eq!(parse_throttle(text.as_bytes()), w.checked(), "{}", text);
        }
    }
}
