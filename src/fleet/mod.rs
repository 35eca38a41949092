//! The rules that processes sharing a retry budget or a circuit breaker
//! follow, as pure arithmetic on the state they share: the token bucket
//! (`bucket`), the breaker's state machine (`breaker`), the adaptive
//! throttle (`throttle`) and the record of a `--lock`'s holder (`lock`) and of a `--once-per` job's last
//! success (`once`). Where that state lives, and how it is read and
//! written, is the stores' business (`store`); what a reset found there
//! (`Found`) is told here, for the stores and the reports alike.

pub mod breaker;
pub mod bucket;
pub mod lock;
pub mod once;
pub mod streak;
pub mod throttle;

/// What a reset found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<T> {
    /// No state: nothing to reset, and nothing was written.
    Nothing,
    /// This state, now reset.
    Held(T),
    /// A state that is not one (corrupt), now replaced.
    Corrupt,
}

impl<T> Found<T> {
    /// What was found, with `f` applied to a state.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Found<U> {
        match self {
            Found::Nothing => Found::Nothing,
            Found::Held(t) => Found::Held(f(t)),
            Found::Corrupt => Found::Corrupt,
        }
    }

    /// Its name in JSON: `nothing`, `state`, `corrupt`.
    pub fn name(&self) -> &'static str {
        match self {
            Found::Nothing => "nothing",
            Found::Held(_) => "state",
            Found::Corrupt => "corrupt",
        }
    }
}
