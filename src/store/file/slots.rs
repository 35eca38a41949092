//! `--lock-limit N` on one host: a counting semaphore of N slots, each a
//! lock file of its own (`KEY.lock.1` … `KEY.lock.N`, each a
//! `file_lock::FileLock`, with its record, its watch and its kernel lock).
//! A run takes the first free slot, trying them in order; when every slot
//! is held it skips, or with `--lock-wait` tries them all again after a
//! jittered pause until one comes free or the wait is over. Each slot is
//! let go however the run ends, as a lock file is. (In Redis the slots
//! are one hash, `redis_slots`.)
//!
//! The slots are a store apart from the plain lock of KEY: every run of a
//! KEY should give the same N.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fleet::lock::Holder;
use crate::report::Warnings;
use crate::run::{Wait, Waited};
use crate::store::file::StateDir;
use crate::store::file::lock::FileLock;
use crate::store::{Acquired, Alarm, Backend, LockBackend, LockState, StoreError, deadline_after};

/// The longest pause between two looks at the slots, while waiting.
const MOST_PAUSE: Duration = Duration::from_millis(500);

/// A semaphore of lock files.
#[derive(Debug)]
pub struct Slots {
    slots: Vec<Box<dyn LockBackend>>,
    /// The slot this run holds.
    held: Cell<Option<usize>>,
}

impl Slots {
    /// The `n` slots of `key` in `dir`; nothing is opened until used.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn in_files(
        dir: &StateDir,
        key: &str,
        n: u32,
        timeout: Duration,
        warnings: &Warnings,
    ) -> Result<Slots, String> {
        Slots::of(n, |i| {
            let name = format!("lock.{i}");
            let f = FileLock::open(dir.clone(), key, &name, timeout, warnings.clone(), None)?;
            Ok(Box::new(f))
        })
    }

    /// The slots `1..=n`, each made by `slot`.
    fn of(
        n: u32,
        slot: impl FnMut(u32) -> Result<Box<dyn LockBackend>, String>,
    ) -> Result<Slots, String> {
        Ok(Slots {
            slots: (1..=n).map(slot).collect::<Result<_, _>>()?,
            held: Cell::new(None),
        })
    }

    /// The slot this run holds.
    fn mine(&self) -> Option<&dyn LockBackend> {
        self.held
            .get()
            .and_then(|i| self.slots.get(i))
            .map(|b| &**b)
    }

    /// Tries every slot once: the one taken, with the store's answer, or
    /// the holder of the first one held.
    fn try_each(
        &self,
        me: &Holder,
        by: Option<Instant>,
        wait: &mut dyn Wait,
    ) -> Result<Result<(usize, Acquired), Option<Holder>>, StoreError> {
        let mut first = None;
        for (i, slot) in self.slots.iter().enumerate() {
            match slot.acquire(me, Duration::ZERO, by, wait, &mut |_| {})? {
                Acquired::Busy(holder) => {
                    first = first.or(Some(holder));
                }
                held @ Acquired::Held { .. } => return Ok(Ok((i, held))),
            }
        }
        Ok(Err(first.flatten()))
    }
}

impl Backend for Slots {
    fn describe(&self) -> String {
        let first = self.slots.first().map(|s| s.describe()).unwrap_or_default();
        format!("{first} … ({} slots)", self.slots.len())
    }

    fn server(&self) -> Option<String> {
        self.slots.first().and_then(|s| s.server())
    }
}

impl LockBackend for Slots {
    fn acquire(
        &self,
        me: &Holder,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Acquired, StoreError> {
        use rand::RngExt as _;
        let give_up = deadline_after(patience);
        let mut bound = Duration::from_millis(20);
        let mut told = false;
        loop {
            let holder = match self.try_each(me, by, wait)? {
                Ok((i, held)) => {
                    self.held.set(Some(i));
                    return Ok(held);
                }
                Err(holder) => holder,
            };
            let now = Instant::now();
            if now >= give_up {
                return Ok(Acquired::Busy(holder));
            }
            if !told {
                told = true;
                waiting(holder.as_ref());
            }
            let pause = rand::rng()
                .random_range(bound / 2..=bound)
                .min(give_up.saturating_duration_since(now));
            bound = (bound * 2).min(MOST_PAUSE);
            if let Waited::Signal(sig) = wait.wait_ready(None, now + pause) {
                return Err(StoreError::Interrupted(sig));
            }
        }
    }

    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Result<(), StoreError> {
        let released = self.mine().map_or(Ok(()), |slot| slot.release(wait, by));
        self.held.set(None);
        released
    }

    fn lost(&self) -> Option<String> {
        self.mine().and_then(LockBackend::lost)
    }

    fn alarm(&self, alarm: Alarm) {
        let alarm = Arc::new(alarm);
        for slot in &self.slots {
            let wake = Arc::clone(&alarm);
            slot.alarm(Box::new(move || wake()));
        }
    }

    fn show(&self, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let slots = self
            .slots
            .iter()
            .map(|slot| slot.show(wait))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(summed(slots))
    }

    fn reset(&self, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let slots = self
            .slots
            .iter()
            .map(|slot| slot.reset(force, wait))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(summed(slots))
    }
}

/// The slots as one lock: held when one is, with each slot up to the last
/// one that holds anything.
pub(super) fn summed(mut slots: Vec<LockState>) -> LockState {
    let used = slots
        .iter()
        .rposition(|s| s.held || s.holder.is_some() || s.corrupt.is_some())
        .map_or(0, |i| i + 1);
    slots.truncate(used);
    LockState {
        held: slots.iter().any(|s| s.held),
        holder: None,
        lease_left: None,
        corrupt: None,
        slots,
    }
}
