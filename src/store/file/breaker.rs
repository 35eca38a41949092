//! A circuit breaker kept in a file (`KEY.breaker`): its fixed-length
//! record, and the breaker's decisions made on it under the file's lock.

use std::time::Duration;

use crate::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use crate::fleet::bucket::check_key;
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::file::{Access, Record, State, StateDir, StateFile, found, now_ms};
use crate::store::{Backend, BreakerBackend, FailMode, Found, StoreError};

/// The breaker file's only line, fixed in length like the budget's.
fn breaker_record(c: Circuit) -> String {
    format!(
        "backoff-breaker v1 failures {:010} opened {:020} until {:020} probe {:020}\n",
        c.failures, c.opened_ms, c.until_ms, c.probe_until_ms
    )
}

/// Parses a breaker record; `None` if it is not exactly one of a circuit a
/// store may hold (`Circuit::checked`).
fn parse_breaker(text: &[u8]) -> Option<Circuit> {
    let text = std::str::from_utf8(text).ok()?;
    let rest = text
        .strip_prefix("backoff-breaker v1 ")?
        .strip_suffix('\n')?;
    let fields: Vec<&str> = rest.split(' ').collect();
    let [
        "failures",
        failures,
        "opened",
        opened,
        "until",
        until,
        "probe",
        probe,
    ] = fields[..]
    else {
        return None;
    };
    let number = |digits: &str, len: usize| {
        (digits.len() == len && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
    };
    Circuit {
        failures: u32::try_from(number(failures, 10)?).ok()?,
        opened_ms: number(opened, 20)?,
        until_ms: number(until, 20)?,
        probe_until_ms: number(probe, 20)?,
    }
    .checked()
}

/// The length of a breaker record.
const BREAKER_LEN: usize = 121;

impl Record for Circuit {
    const KIND: &'static str = "breaker";
    const LEN: usize = BREAKER_LEN;
    fn write(self) -> String {
        breaker_record(self)
    }
    fn read(text: &[u8]) -> Option<Circuit> {
        parse_breaker(text)
    }
}

/// A circuit breaker kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileBreaker {
    file: StateFile,
    key: String,
    breaker: Breaker,
    fail: FailMode,
    warnings: Warnings,
}

impl Backend for FileBreaker {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl FileBreaker {
    /// The breaker `key` in `dir`, as `FileBudget::open` opens a budget: a
    /// corrupt state becomes a closed circuit (open), or is left alone and
    /// the store counts as unavailable (closed).
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        breaker: Breaker,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<FileBreaker, String> {
        check_key(key)?;
        Ok(FileBreaker {
            file: StateFile::new(dir, key, Circuit::KIND, timeout),
            key: key.to_owned(),
            breaker,
            fail,
            warnings,
        })
    }

    fn circuit_of(&self, state: State<Circuit>) -> Result<Circuit, StoreError> {
        match state {
            State::Fresh => Ok(Circuit::default()),
            State::Held(c) => Ok(c),
            State::Corrupt(why) if self.fail == FailMode::Open => {
                self.warnings
                    .warn(&format!("circuit breaker {why}; starting closed"));
                Ok(Circuit::default())
            }
            State::Corrupt(why) => Err(StoreError::Failed(why)),
        }
    }
}

impl BreakerBackend for FileBreaker {
    /// Decides whether this run may start the command: the answer, the
    /// circuit as it was before, and the time of the decision.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used, or a signal ends the wait.
    fn admit(&self, wait: &mut dyn Wait) -> Result<(Admission, Circuit, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let now = now_ms();
            // The circuit as this run trusts it, as its lines tell it.
            let before = this
                .circuit_of(state)?
                .clamped(now, this.breaker.cooldown_ms);
            let (admission, after) = this.breaker.admit(before, now);
            Ok((Some(after), (admission, before, now)))
        })
    }

    /// Records how an admitted run ended (`probe`: its claim's end, when it
    /// was the probe): the circuit after, and the time.
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
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.circuit_of(state)?;
            let now = now_ms();
            let after = this.breaker.record(before, now, end, probe);
            Ok((Some(after), (after, now)))
        })
    }

    /// The circuit and the time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used or is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Circuit, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(
            Access::Look,
            wait,
            move |state: State<Circuit>| match state {
                State::Fresh => Ok((None, (Circuit::default(), now_ms()))),
                State::Held(c) => Ok((None, (c, now_ms()))),
                State::Corrupt(why) => Err(StoreError::Failed(format!(
                    "{why}; 'backoff breaker reset {}' with the same --budget-dir repairs it",
                    this.key
                ))),
            },
        )
    }

    /// Closes the circuit, whatever the state file held (a corrupt state
    /// included): what it found, and the time. No state file is left as it
    /// is (none is made: a circuit without a state is closed).
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Circuit>, u64), StoreError> {
        self.file
            .with_state(Access::Rewrite, wait, |state: State<Circuit>| {
                let found = found(state);
                let closed = (found != Found::Nothing).then(Circuit::default);
                Ok((closed, (found, now_ms())))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaker_records_round_trip_and_anything_else_is_corrupt() {
        for c in [
            Circuit::default(),
            Circuit {
                failures: u32::MAX,
                opened_ms: crate::fleet::breaker::LATEST_MS,
                until_ms: 1,
                probe_until_ms: 1_796_144_602_783,
            },
        ] {
            assert_eq!(breaker_record(c).len(), BREAKER_LEN);
            assert_eq!(parse_breaker(breaker_record(c).as_bytes()), Some(c));
        }
        let good = breaker_record(Circuit::default());
        for bad in [
            good.replace("failures 0", "failures x"),
            good.replace(" probe ", " probes "),
            good.replace("until 0", "until  "),
            good.trim_end().to_owned(),
            good.replace("failures 0000000000", "failures 9999999999"),
            // Past year 9999.
            good.replace("until 00000000000000000000", "until 00000253402300800000"),
            good.replace(
                "opened 00000000000000000000",
                &format!("opened {}", u64::MAX),
            ),
        ] {
            assert_eq!(parse_breaker(bad.as_bytes()), None, "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_a_breaker_state_or_corrupt(text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..130)) {
            if let Some(c) = parse_breaker(&text) {
                proptest::prop_assert_eq!(c.checked(), Some(c));
                proptest::prop_assert_eq!(breaker_record(c).into_bytes(), text);
            }
        }

        #[test]
        fn any_breaker_record_is_read_back_only_when_a_store_may_hold_it(
            failures in proptest::prelude::any::<u64>(),
            times in proptest::array::uniform3(proptest::prop_oneof![
                proptest::prelude::any::<u64>(),
                0..=crate::fleet::breaker::LATEST_MS + 1,
            ]),
        ) {
            let [opened, until, probe] = times;
            let text = format!(
                "backoff-breaker v1 failures {failures:010} opened {opened:020} until {until:020} probe {probe:020}\n"
            );
            let valid = u32::try_from(failures).is_ok()
                && times.iter().all(|&t| t <= crate::fleet::breaker::LATEST_MS);
            proptest::prop_assert_eq!(parse_breaker(text.as_bytes()).is_some(), valid, "{}", text);
        }
    }
}
