//! The circuit breaker of `--breaker KEY`, as pure arithmetic on its shared
//! state (the stores keep it; the Redis store runs the same rules in its
//! script). Runs that gave up, `failures` of them in a row, open the
//! circuit: while it is open no run starts the command. After `cooldown`
//! it is half-open: the first process to ask becomes the probe (one
//! attempt), and the others keep skipping. The probe's success closes the
//! circuit, and its failure opens it for another cooldown. A probe that
//! never reports (killed) holds the circuit for one cooldown at most; then
//! the next process probes. A run that succeeds closes the circuit and
//! resets the count, probe or not.

/// The limits of a breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// Runs in a row that gave up that open the circuit (at least 1).
    pub failures: u32,
    /// How long it stays open before a probe, in milliseconds (at least 1).
    pub cooldown_ms: u64,
}

/// The shared state of a circuit. All zero: closed, nothing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Circuit {
    /// Runs in a row that gave up.
    pub failures: u32,
    /// When the circuit opened, in Unix milliseconds; 0 while closed.
    pub opened_ms: u64,
    /// When the running probe started, in Unix milliseconds; 0 for none.
    pub probe_ms: u64,
}

/// What a circuit is, at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Runs go ahead.
    Closed,
    /// No run starts the command until `until_ms`.
    Open {
        /// When it opened, in Unix milliseconds.
        since_ms: u64,
        /// When it becomes half-open.
        until_ms: u64,
    },
    /// The next run (or the running probe) decides.
    HalfOpen {
        /// When it opened, in Unix milliseconds.
        since_ms: u64,
        /// When the running probe started, if one is running.
        probe_ms: Option<u64>,
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

/// Whether a run may start the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The circuit is closed: run as usual.
    Run,
    /// This run is the half-open circuit's probe, started at `probe_ms`
    /// (the value to give back to `record`): one attempt.
    Probe {
        /// The probe's start, in Unix milliseconds.
        probe_ms: u64,
    },
    /// The command is not run.
    Skip {
        /// When the circuit opened, in Unix milliseconds.
        since_ms: u64,
        /// When a run may probe again.
        until_ms: u64,
        /// Whether another process is probing now.
        probing: bool,
    },
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
    /// The circuit's state at `now_ms`.
    pub fn state(self, c: Circuit, now_ms: u64) -> State {
        if c.opened_ms == 0 {
            return State::Closed;
        }
        let until_ms = c.opened_ms.saturating_add(self.cooldown_ms);
        if now_ms < until_ms {
            return State::Open {
                since_ms: c.opened_ms,
                until_ms,
            };
        }
        let probing = c.probe_ms != 0 && now_ms < c.probe_ms.saturating_add(self.cooldown_ms);
        State::HalfOpen {
            since_ms: c.opened_ms,
            probe_ms: probing.then_some(c.probe_ms),
        }
    }

    /// Decides whether a run starting at `now_ms` may start the command,
    /// and the state to store.
    pub fn admit(self, c: Circuit, now_ms: u64) -> (Admission, Circuit) {
        match self.state(c, now_ms) {
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
                probe_ms: Some(probe_ms),
            } => (
                Admission::Skip {
                    since_ms,
                    until_ms: probe_ms.saturating_add(self.cooldown_ms),
                    probing: true,
                },
                c,
            ),
            State::HalfOpen { probe_ms: None, .. } => {
                // 0 means no probe: a clock at the epoch still probes.
                let probe_ms = now_ms.max(1);
                (Admission::Probe { probe_ms }, Circuit { probe_ms, ..c })
            }
        }
    }

    /// The state after a run that was admitted ended at `now_ms`; `probe`
    /// is the probe's start when it was the probe.
    pub fn record(self, c: Circuit, now_ms: u64, end: RunEnd, probe: Option<u64>) -> Circuit {
        let opened_now = now_ms.max(1);
        match (end, probe) {
            (RunEnd::Succeeded, _) => Circuit::default(),
            (RunEnd::GaveUp, Some(_)) => Circuit {
                failures: c.failures.saturating_add(1),
                opened_ms: opened_now,
                probe_ms: 0,
            },
            (RunEnd::GaveUp, None) => {
                let failures = c.failures.saturating_add(1);
                // A run admitted before the circuit opened does not move
                // the opening on.
                let opened_ms = if c.opened_ms != 0 {
                    c.opened_ms
                } else if failures >= self.failures {
                    opened_now
                } else {
                    0
                };
                Circuit {
                    failures,
                    opened_ms,
                    ..c
                }
            }
            // An interrupted probe lets the next process probe at once.
            (RunEnd::Interrupted, Some(p)) if c.probe_ms == p => Circuit { probe_ms: 0, ..c },
            (RunEnd::Interrupted, _) => c,
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

    #[test]
    fn failures_in_a_row_open_the_circuit_and_a_success_resets_the_count() {
        let mut c = Circuit::default();
        for t in [10, 20] {
            assert_eq!(B.admit(c, t).0, Admission::Run);
            c = B.record(c, t, RunEnd::GaveUp, None);
        }
        assert_eq!(B.state(c, 25), State::Closed);
        // A success in between starts the count again.
        let reset = B.record(c, 25, RunEnd::Succeeded, None);
        assert_eq!(reset, Circuit::default());
        c = B.record(c, 30, RunEnd::GaveUp, None);
        assert_eq!(
            B.state(c, 30),
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
        assert_eq!((later.opened_ms, later.failures), (30, 4));
    }

    #[test]
    fn half_open_lets_exactly_one_probe_through_and_it_decides() {
        let open = Circuit {
            failures: 3,
            opened_ms: 30,
            probe_ms: 0,
        };
        let (first, c) = B.admit(open, 1030);
        assert_eq!(first, Admission::Probe { probe_ms: 1030 });
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
            B.record(c, 1100, RunEnd::Succeeded, Some(1030)),
            Circuit::default()
        );
        let reopened = B.record(c, 1100, RunEnd::GaveUp, Some(1030));
        assert_eq!(
            B.state(reopened, 1100),
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
            failures: 3,
            opened_ms: 30,
            probe_ms: 1030,
        };
        assert!(matches!(
            B.admit(probing, 2029).0,
            Admission::Skip { probing: true, .. }
        ));
        assert_eq!(
            B.admit(probing, 2030).0,
            Admission::Probe { probe_ms: 2030 }
        );
        let released = B.record(probing, 1500, RunEnd::Interrupted, Some(1030));
        assert_eq!(released.probe_ms, 0);
        assert_eq!(
            B.admit(released, 1501).0,
            Admission::Probe { probe_ms: 1501 }
        );
        // A stale probe's interruption leaves a newer probe alone.
        let newer = Circuit {
            probe_ms: 2030,
            ..probing
        };
        assert_eq!(
            B.record(newer, 2040, RunEnd::Interrupted, Some(1030)),
            newer
        );
        // A run that was not the probe changes nothing when interrupted.
        assert_eq!(B.record(probing, 1500, RunEnd::Interrupted, None), probing);
    }

    #[test]
    fn one_failure_may_be_enough_and_clocks_at_zero_still_work() {
        let one = Breaker {
            failures: 1,
            cooldown_ms: 5,
        };
        let c = one.record(Circuit::default(), 0, RunEnd::GaveUp, None);
        assert_eq!(c.opened_ms, 1, "opened, even at the epoch");
        assert_eq!(one.admit(c, 6).0, Admission::Probe { probe_ms: 6 });
        assert_eq!(State::Closed.gauge(), 0);
    }
}
