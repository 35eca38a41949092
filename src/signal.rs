//! Signals by name and number: parsing `TERM`, `SIGTERM`, `term` or `15`,
//! naming a signal in reports, and which signals end a run. Pure: sending,
//! watching and dying by signals is `sys::signals`' job.

use libc::c_int;

/// Signals that end a run: during a delay at once, during an attempt after
/// forwarding them to the child.
pub const TERMINATING: [c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The name of a signal without its `SIG` prefix (`TERM`), or its number.
pub fn short_name(sig: c_int) -> String {
    match signal_hook::low_level::signal_name(sig) {
        Some(name) => name.trim_start_matches("SIG").to_owned(),
        None => sig.to_string(),
    }
}

/// The highest signal number accepted on the command line.
fn max_signal() -> c_int {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        libc::SIGRTMAX()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        31
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
    (1..=max_signal())
        .find(|&n| signal_hook::low_level::signal_name(n).is_some_and(|m| &m[3..] == name))
}

#[cfg(test)]
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
}
