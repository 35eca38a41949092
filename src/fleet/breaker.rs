//! The circuit breaker of `--breaker KEY`, as pure arithmetic on its shared
//! state (the stores keep it; the Redis store runs the same rules in its
//! script). Runs that gave up, `failures` of them in a row, open the
//! circuit: while it is open no run starts the command. After `cooldown`
//! it is half-open: the first process to ask becomes the probe (one
//! attempt), and the others keep skipping. The probe's success closes the
//! circuit, and its failure opens it for another cooldown. A probe that
//! never reports (killed) holds the circuit for one cooldown at most; then
//! the next process probes. A run that succeeds closes the circuit and
//! resets the count, probe or not. Stored times are trusted at most one
//! cooldown ahead of the clock reading them (a clock stepped back waits one
//! cooldown, not as long as the step), and none is past year 9999.

/// The latest time a circuit may hold: the last millisecond of year 9999,
/// the last one RFC 3339 can write. A stored state with a later time is
/// corrupt, and no time stored is later (a clock past it stores this).
pub const LATEST_MS: u64 = 253_402_300_799_999;

/// The limits of a breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// Runs in a row that gave up that open the circuit (at least 1).
    pub failures: u32,
    /// How long it stays open before a probe, in milliseconds (at least 1).
    pub cooldown_ms: u64,
}

/// The shared state of a circuit. All zero: closed, nothing failed. Times
/// are Unix milliseconds; the state holds when the circuit reopens and when
/// a probe's claim ends, so that it reads the same whatever cooldown the
/// process reading it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Circuit {
    /// Runs in a row that gave up.
    pub failures: u32,
    /// When the circuit opened; 0 while closed.
    pub opened_ms: u64,
    /// When it becomes half-open (its opening plus the cooldown).
    pub until_ms: u64,
    /// When the running probe's claim ends (its start plus the cooldown); 0
    /// for no probe.
    pub probe_until_ms: u64,
}

/// What a circuit is, at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Runs go ahead.
    Closed,
    /// No run starts the command until `until_ms`.
    Open {
        /// When it opened.
        since_ms: u64,
        /// When it becomes half-open.
        until_ms: u64,
    },
    /// The next run (or the running probe) decides.
    HalfOpen {
        /// When it opened.
        since_ms: u64,
        /// When the running probe's claim ends, if one is running.
        probe_until_ms: Option<u64>,
    },
}

impl State {
    /// The name used in reports, events and `breaker show`.
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open { .. } => "open",
            State::HalfOpen { .. } => "half_open",
        }
    }

    /// The value of the `backoff_breaker_state` gauge: 0 closed, 1 open,
    /// 2 half-open.
    pub fn gauge(self) -> u8 {
        match self {
            State::Closed => 0,
            State::Open { .. } => 1,
            State::HalfOpen { .. } => 2,
        }
    }
}

impl Circuit {
    /// The circuit, if it is one a store may hold: no time past
    /// `LATEST_MS`. Anything else in a store is corrupt.
    pub fn checked(self) -> Option<Circuit> {
        [self.opened_ms, self.until_ms, self.probe_until_ms]
            .iter()
            .all(|&t| t <= LATEST_MS)
            .then_some(self)
    }

    /// The circuit as a process whose clock reads `now_ms` may trust it: a
    /// time further ahead than `cooldown_ms` (a clock stepped back since it
    /// was stored, or a state written by hand) comes back to one cooldown
    /// from now, and an opening in the future to now. A circuit reopens at
    /// most one cooldown from now, whatever was stored.
    #[must_use]
    pub fn clamped(self, now_ms: u64, cooldown_ms: u64) -> Circuit {
        let latest = now_ms.saturating_add(cooldown_ms).min(LATEST_MS);
        Circuit {
            failures: self.failures,
            opened_ms: self.opened_ms.min(now_ms.clamp(1, LATEST_MS)),
            until_ms: self.until_ms.min(latest),
            probe_until_ms: self.probe_until_ms.min(latest),
        }
    }

    /// Its state at `now_ms`.
    pub fn state(self, now_ms: u64) -> State {
        if self.opened_ms == 0 {
            State::Closed
        } else if now_ms < self.until_ms {
            State::Open {
                since_ms: self.opened_ms,
                until_ms: self.until_ms,
            }
        } else {
            State::HalfOpen {
                since_ms: self.opened_ms,
                probe_until_ms: (now_ms < self.probe_until_ms).then_some(self.probe_until_ms),
            }
        }
    }
}

/// Whether a run may start the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The circuit is closed: run as usual.
    Run,
    /// This run is the half-open circuit's probe (one attempt); its claim
    /// ends at `until_ms`, the value to give back to `record`.
    Probe {
        /// When its claim ends.
        until_ms: u64,
    },
    /// The command is not run.
    Skip {
        /// When the circuit opened.
        since_ms: u64,
        /// When a run may probe again.
        until_ms: u64,
        /// Whether another process is probing now.
        probing: bool,
    },
}

impl Admission {
    /// The decision's name in events and reports: `run`, `probe`, `skip`.
    pub fn name(self) -> &'static str {
        match self {
            Admission::Run => "run",
            Admission::Probe { .. } => "probe",
            Admission::Skip { .. } => "skip",
        }
    }
}

/// How a run that was admitted ended, as the breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The run succeeded.
    Succeeded,
    /// The run gave up: retries exhausted, stopped, deadline or budget.
    GaveUp,
    /// A signal ended the run: it tells nothing about the command.
    Interrupted,
}

impl Breaker {
    /// Decides whether a run starting at `now_ms` may start the command,
    /// and the state to store.
    pub fn admit(self, c: Circuit, now_ms: u64) -> (Admission, Circuit) {
        let c = c.clamped(now_ms, self.cooldown_ms);
        match c.state(now_ms) {
            State::Closed => (Admission::Run, c),
            State::Open { since_ms, until_ms } => (
                Admission::Skip {
                    since_ms,
                    until_ms,
                    probing: false,
                },
                c,
            ),
            State::HalfOpen {
                since_ms,
                probe_until_ms: Some(until_ms),
            } => (
                Admission::Skip {
                    since_ms,
                    until_ms,
                    probing: true,
                },
                c,
            ),
            State::HalfOpen {
                probe_until_ms: None,
                ..
            } => {
                let until_ms = self.reopening(now_ms);
                (
                    Admission::Probe { until_ms },
                    Circuit {
                        probe_until_ms: until_ms,
                        ..c
                    },
                )
            }
        }
    }

    /// One cooldown after `now_ms`: when a circuit opened (or a probe's
    /// claim made) then ends; never 0 (closed) nor past `LATEST_MS`.
    fn reopening(self, now_ms: u64) -> u64 {
        now_ms.saturating_add(self.cooldown_ms).clamp(1, LATEST_MS)
    }

    /// The state after a run that was admitted ended at `now_ms`; `probe`
    /// is its claim's end when it was the probe.
    pub fn record(self, c: Circuit, now_ms: u64, end: RunEnd, probe: Option<u64>) -> Circuit {
        // 0 means closed: a clock at the epoch still opens.
        let open = |failures| Circuit {
            failures,
            opened_ms: now_ms.clamp(1, LATEST_MS),
            until_ms: self.reopening(now_ms),
            probe_until_ms: 0,
        };
        // A probe whose claim is no longer the stored one (it outlived its
        // claim, and another run probed, or the circuit was reset) counts
        // as any run does.
        let probe = probe.filter(|&p| c.probe_until_ms == p);
        let c = c.clamped(now_ms, self.cooldown_ms);
        match (end, probe) {
            (RunEnd::Succeeded, _) => Circuit::default(),
            (RunEnd::GaveUp, Some(_)) => open(c.failures.saturating_add(1)),
            (RunEnd::GaveUp, None) => {
                let failures = c.failures.saturating_add(1);
                if c.opened_ms == 0 && failures >= self.failures {
                    open(failures)
                } else {
                    // A run admitted before the circuit opened does not
                    // move the opening on.
                    Circuit { failures, ..c }
                }
            }
            // An interrupted probe lets the next process probe at once.
            (RunEnd::Interrupted, Some(_)) => Circuit {
                probe_until_ms: 0,
                ..c
            },
            (RunEnd::Interrupted, None) => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Breaker = Breaker {
        failures: 3,
        cooldown_ms: 1000,
    };

    const OPEN: Circuit = Circuit {
        failures: 3,
        opened_ms: 30,
        until_ms: 1030,
        probe_until_ms: 0,
    };

    #[test]
    fn failures_in_a_row_open_the_circuit_and_a_success_resets_the_count() {
        let mut c = Circuit::default();
        for t in [10, 20] {
            assert_eq!(B.admit(c, t).0, Admission::Run);
            c = B.record(c, t, RunEnd::GaveUp, None);
        }
        assert_eq!(c.state(25), State::Closed);
        // A success in between starts the count again.
        let reset = B.record(c, 25, RunEnd::Succeeded, None);
        assert_eq!(reset, Circuit::default());
        c = B.record(c, 30, RunEnd::GaveUp, None);
        assert_eq!(c, OPEN);
        assert_eq!(
            c.state(30),
            State::Open {
                since_ms: 30,
                until_ms: 1030
            }
        );
        assert_eq!(
            B.admit(c, 500),
            (
                Admission::Skip {
                    since_ms: 30,
                    until_ms: 1030,
                    probing: false
                },
                c
            )
        );
        // A run admitted before it opened does not move the opening on.
        let later = B.record(c, 900, RunEnd::GaveUp, None);
        assert_eq!(later, Circuit { failures: 4, ..c });
    }

    #[test]
    fn half_open_lets_exactly_one_probe_through_and_it_decides() {
        let (first, c) = B.admit(OPEN, 1030);
        assert_eq!(first, Admission::Probe { until_ms: 2030 });
        let (second, same) = B.admit(c, 1031);
        assert_eq!(
            second,
            Admission::Skip {
                since_ms: 30,
                until_ms: 2030,
                probing: true
            }
        );
        assert_eq!(same, c);
        // Its success closes; its failure opens for another cooldown.
        assert_eq!(
            B.record(c, 1100, RunEnd::Succeeded, Some(2030)),
            Circuit::default()
        );
        let reopened = B.record(c, 1100, RunEnd::GaveUp, Some(2030));
        assert_eq!(
            reopened.state(1100),
            State::Open {
                since_ms: 1100,
                until_ms: 2100
            }
        );
        assert_eq!(reopened.failures, 4);
    }

    #[test]
    fn a_lost_probe_holds_the_circuit_one_cooldown_and_an_interrupted_one_none() {
        let probing = Circuit {
            probe_until_ms: 2030,
            ..OPEN
        };
        assert!(matches!(
            B.admit(probing, 2029).0,
            Admission::Skip { probing: true, .. }
        ));
        assert_eq!(
            B.admit(probing, 2030).0,
            Admission::Probe { until_ms: 3030 }
        );
        let released = B.record(probing, 1500, RunEnd::Interrupted, Some(2030));
        assert_eq!(released.probe_until_ms, 0);
        assert_eq!(
            B.admit(released, 1501).0,
            Admission::Probe { until_ms: 2501 }
        );
        // A stale probe's interruption leaves a newer probe alone.
        let newer = Circuit {
            probe_until_ms: 3030,
            ..probing
        };
        assert_eq!(
            B.record(newer, 2040, RunEnd::Interrupted, Some(2030)),
            newer
        );
        // A run that was not the probe changes nothing when interrupted.
        assert_eq!(B.record(probing, 1500, RunEnd::Interrupted, None), probing);
    }

    #[test]
    fn a_probe_that_outlived_its_claim_counts_as_any_run() {
        // Probe A's claim ran out; probe B closed the circuit; A fails.
        let closed = Circuit::default();
        let late = B.record(closed, 5000, RunEnd::GaveUp, Some(2030));
        assert_eq!(
            late,
            Circuit {
                failures: 1,
                ..closed
            },
            "not reopened"
        );
        // B reopened it; A's failure does not move the opening on.
        let reopened = B.record(
            Circuit {
                probe_until_ms: 3030,
                ..OPEN
            },
            2500,
            RunEnd::GaveUp,
            Some(3030),
        );
        let after = B.record(reopened, 2600, RunEnd::GaveUp, Some(2030));
        assert_eq!(
            after,
            Circuit {
                failures: reopened.failures + 1,
                ..reopened
            }
        );
    }

    #[test]
    fn one_failure_may_be_enough_and_clocks_at_zero_still_work() {
        let one = Breaker {
            failures: 1,
            cooldown_ms: 5,
        };
        let c = one.record(Circuit::default(), 0, RunEnd::GaveUp, None);
        assert_eq!(
            (c.opened_ms, c.until_ms),
            (1, 5),
            "opened, even at the epoch"
        );
        assert_eq!(one.admit(c, 6).0, Admission::Probe { until_ms: 11 });
        assert_eq!(State::Closed.gauge(), 0);
    }

    #[test]
    fn a_clock_stepped_back_waits_one_cooldown_at_most() {
        let day = 24 * 3600 * 1000;
        // Stored by a clock 30 days ahead of this one.
        let ahead = Circuit {
            failures: 3,
            opened_ms: 30 * day,
            until_ms: 30 * day + 1000,
            probe_until_ms: 0,
        };
        let (admission, stored) = B.admit(ahead, 5000);
        assert_eq!(
            admission,
            Admission::Skip {
                since_ms: 5000,
                until_ms: 6000,
                probing: false
            }
        );
        assert_eq!(B.admit(stored, 6000).0, Admission::Probe { until_ms: 7000 });
        // A probe's claim from the future is cut the same way.
        let claim = Circuit {
            probe_until_ms: 30 * day,
            ..OPEN
        };
        assert_eq!(
            B.admit(claim, 2000).0,
            Admission::Skip {
                since_ms: 30,
                until_ms: 3000,
                probing: true
            }
        );
        // ...and its own probe still counts as the probe.
        assert_eq!(
            B.record(claim, 2000, RunEnd::Succeeded, Some(30 * day)),
            Circuit::default()
        );
        assert_eq!(
            B.record(claim, 2000, RunEnd::Interrupted, Some(30 * day))
                .probe_until_ms,
            0
        );
        // Nothing past year 9999 is ever stored, whatever the clock says.
        let late = B.record(Circuit::default(), u64::MAX, RunEnd::GaveUp, None);
        let late = B.record(late, u64::MAX, RunEnd::GaveUp, None);
        let late = B.record(late, u64::MAX, RunEnd::GaveUp, None);
        assert_eq!((late.opened_ms, late.until_ms), (LATEST_MS, LATEST_MS));
        assert_eq!(late.checked(), Some(late));
        assert_eq!(
            Circuit {
                until_ms: LATEST_MS + 1,
                ..late
            }
            .checked(),
            None
        );
    }

    fn any_circuit() -> impl proptest::strategy::Strategy<Value = Circuit> {
        use proptest::prelude::*;
        let time = prop_oneof![any::<u64>(), 0..=LATEST_MS, Just(0), Just(LATEST_MS)];
        (any::<u32>(), time.clone(), time.clone(), time).prop_map(|(f, o, u, p)| Circuit {
            failures: f,
            opened_ms: o,
            until_ms: u,
            probe_until_ms: p,
        })
    }

    proptest::proptest! {
        #[test]
        fn no_stored_circuit_or_clock_breaks_the_rules(
            c in any_circuit(),
            now in proptest::prop_oneof![proptest::prelude::any::<u64>(), 0..=LATEST_MS],
            cooldown_ms in 1..=u64::try_from(crate::duration::MAX_DURATION.as_millis()).unwrap_or(u64::MAX),
            failures in 1u32..=u32::MAX,
            end in proptest::sample::select(vec![RunEnd::Succeeded, RunEnd::GaveUp, RunEnd::Interrupted]),
            claim in proptest::option::of(proptest::prelude::any::<u64>()),
        ) {
            let b = Breaker { failures, cooldown_ms };
            let reach = now.saturating_add(cooldown_ms).clamp(1, LATEST_MS);
            let (admission, admitted) = b.admit(c, now);
            let recorded = b.record(c, now, end, claim.or(Some(c.probe_until_ms)));
            for after in [admitted, recorded, c.clamped(now, cooldown_ms)] {
                proptest::prop_assert_eq!(after.checked(), Some(after));
                // It reopens, and a claim ends, one cooldown from now at most.
                proptest::prop_assert!(after.until_ms <= reach && after.probe_until_ms <= reach);
                proptest::prop_assert!(after.opened_ms <= now.clamp(1, LATEST_MS));
                let _ = after.state(now).name();
            }
            if let Admission::Skip { until_ms, .. } | Admission::Probe { until_ms } = admission {
                proptest::prop_assert!(until_ms <= reach);
            }
        }
    }
}
