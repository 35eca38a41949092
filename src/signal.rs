//! Signals by name and number: parsing `TERM`, `SIGTERM`, `term` or `15`,
//! naming a signal in reports, and which signals end a run. Pure: sending,
//! watching and dying by signals is `sys::signals`' job; which signals
//! there are, by number and name, is `sys::signal_names`' (on Windows, the
//! console's control events: `CTRL_C`, `CTRL_BREAK`, `CTRL_CLOSE`).

use libc::c_int;

use crate::sys::signal_names::PREFIX;
pub use crate::sys::signal_names::{
    DEATH_BY_SIGNAL, DEFAULT_TIMEOUT_SIGNAL, INT, PIPE, TERM, TERMINATING, real_time, sendable,
};
use crate::sys::signal_names::{max_signal, plain_name};

/// Whether `sig` ends a run as SIGTERM does: one of `TERMINATING`, or a
/// real-time signal.
pub fn is_terminating(sig: c_int) -> bool {
    TERMINATING.contains(&sig) || real_time().contains(&sig)
}

/// The name of a signal without its `SIG` prefix (`TERM`, `RTMIN+2`), or
/// its number.
pub fn short_name(sig: c_int) -> String {
    let rt = real_time();
    match plain_name(sig) {
        Some(name) => name.to_owned(),
        None if sig == *rt.start() => "RTMIN".to_owned(),
        None if rt.contains(&sig) => format!("RTMIN+{}", sig - rt.start()),
        None => sig.to_string(),
    }
}

/// Parses `TERM`, `SIGTERM`, `term` or `15` into a signal number.
pub fn parse(s: &str) -> Option<c_int> {
    if let Ok(n) = s.parse::<c_int>() {
        return (1..=max_signal()).contains(&n).then_some(n);
    }
    let upper = s.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    if name.is_empty() {
        return None;
    }
    if let Some(rest) = name.strip_prefix("RTMIN") {
        let rt = real_time();
        let n = if rest.is_empty() {
            0
        } else {
            rest.strip_prefix('+')?.parse().ok()?
        };
        return rt.start().checked_add(n).filter(|s| rt.contains(s));
    }
    (1..=max_signal()).find(|&n| plain_name(n) == Some(name))
}

/// The full name of a signal, as the system writes it: `SIGTERM`; on
/// Windows the control event's own, `CTRL_BREAK`.
pub fn full_name(sig: c_int) -> String {
    format!("{PREFIX}{}", short_name(sig))
}
