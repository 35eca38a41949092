//! The rules that processes sharing a retry budget or a circuit breaker
//! follow, as pure arithmetic on the state they share: the token bucket
//! (`bucket`), the breaker's state machine (`breaker`) and the adaptive
//! throttle (`throttle`). Where that state lives, and how it is read and
//! written, is the stores' business (`budget`).

pub mod breaker;
pub mod bucket;
pub mod throttle;
