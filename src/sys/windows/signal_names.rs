//! Windows' counterpart of signals, for `crate::signal`: the console's
//! control events. No process dies by one: a console program that Ctrl-C
//! ends exits with `STATUS_CONTROL_C_EXIT` (0xC000013A). backoff numbers
//! them as the C runtime numbers its signals (`SIGINT` 2, `SIGBREAK` 21),
//! and the rest after them.

/// No process dies by a signal here: `sig:` rules are refused.
pub const DEATH_BY_SIGNAL: bool = false;

/// Nothing goes before a control event's name: `CTRL_BREAK`.
pub const PREFIX: &str = "";

/// The control event a timed-out attempt's process group gets first by
/// default (`--signal`): Ctrl-C cannot be sent to one group alone.
pub const DEFAULT_TIMEOUT_SIGNAL: &str = "CTRL_BREAK";

/// Ctrl-C.
pub const INT: i32 = 2;
/// The console closing, as Unix's `SIGHUP`.
pub const CLOSE: i32 = 1;
/// Ctrl-Break.
pub const BREAK: i32 = 21;
/// The user logging off: named, but not acted on (a service is told of
/// every user's).
pub const LOGOFF: i32 = 23;
/// The system shutting down, as Unix's `SIGTERM`.
pub const TERM: i32 = 15;
/// No such event: a number nothing ends by.
pub const PIPE: i32 = -13;

/// The control events that end a run: all but a log-off.
pub const TERMINATING: &[i32] = &[INT, CLOSE, BREAK, TERM];

/// No real-time signals here.
#[allow(clippy::reversed_empty_ranges)]
pub fn real_time() -> std::ops::RangeInclusive<i32> {
    1..=0
}

/// Whether `--signal` may name the event: only Ctrl-Break reaches a
/// console process group of its own (Windows delivers Ctrl-C to no such
/// group: the processes in it start with Ctrl-C ignored).
pub fn sendable(sig: i32) -> bool {
    sig == BREAK
}

/// The name of a control event, without its `_EVENT`.
pub fn plain_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        INT => "CTRL_C",
        CLOSE => "CTRL_CLOSE",
        BREAK => "CTRL_BREAK",
        LOGOFF => "CTRL_LOGOFF",
        TERM => "CTRL_SHUTDOWN",
        _ => return None,
    })
}

/// The highest number `--signal` may give.
pub fn max_signal() -> i32 {
    LOGOFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_events_are_named_and_all_but_a_log_off_end_a_run() {
        assert_eq!(plain_name(BREAK), Some("CTRL_BREAK"));
        assert_eq!(plain_name(INT), Some("CTRL_C"));
        assert_eq!(plain_name(CLOSE), Some("CTRL_CLOSE"));
        assert_eq!(plain_name(TERM), Some("CTRL_SHUTDOWN"));
        assert_eq!(plain_name(9), None);
        for sig in [INT, CLOSE, BREAK, TERM] {
            assert!(TERMINATING.contains(&sig), "{sig}");
            assert!((1..=max_signal()).contains(&sig), "{sig}");
        }
        assert!(!TERMINATING.contains(&LOGOFF));
        assert!(!TERMINATING.contains(&PIPE));
        assert!(real_time().is_empty());
    }

    #[test]
    fn only_ctrl_break_reaches_a_process_group() {
        assert!(sendable(BREAK));
        assert!(!sendable(INT));
        assert!(!sendable(CLOSE));
        const { assert!(!DEATH_BY_SIGNAL) };
    }
}
