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

// Unix's signals (Windows' control events: sys::windows::signal_names).
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn parses_names_numbers_and_prefixes_case_insensitively() {
        assert_eq!(parse("TERM"), Some(libc::SIGTERM));
        assert_eq!(parse("sigterm"), Some(libc::SIGTERM));
        assert_eq!(parse("SIGKILL"), Some(libc::SIGKILL));
        assert_eq!(parse("9"), Some(libc::SIGKILL));
        assert_eq!(parse("hup"), Some(libc::SIGHUP));
        for bad in ["", "SIG", "0", "-1", "999", "FOO", "SIGFOO", "1.5"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn short_names_drop_the_prefix() {
        assert_eq!(short_name(libc::SIGTERM), "TERM");
        assert_eq!(short_name(200), "200");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn real_time_signals_are_named_from_rtmin_and_parsed_back() {
        let first = libc::SIGRTMIN();
        assert_eq!(short_name(first), "RTMIN");
        assert_eq!(short_name(first + 3), "RTMIN+3");
        assert_eq!(parse("RTMIN+3"), Some(first + 3));
        assert_eq!(parse("sigrtmin"), Some(first));
        assert_eq!(parse("RTMIN+999"), None);
        assert_eq!(parse("RTMIN3"), None);
        assert!(is_terminating(first + 3));
        assert_eq!(short_name(libc::SIGPWR), "PWR");
        assert_eq!(parse("SIGPWR"), Some(libc::SIGPWR));
    }

    #[test]
    fn faults_of_backoffs_own_and_sigpipe_do_not_end_a_run() {
        for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM, libc::SIGTERM] {
            assert!(is_terminating(sig), "{sig}");
        }
        for sig in [
            libc::SIGSEGV,
            libc::SIGPIPE,
            libc::SIGXFSZ,
            libc::SIGCHLD,
            libc::SIGKILL,
        ] {
            assert!(!is_terminating(sig), "{sig}");
        }
    }
}
