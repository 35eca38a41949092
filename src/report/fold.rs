//! The folds of CI runners' logs: each attempt in a fold (GitHub Actions'
//! `::group::`, GitLab CI's collapsible sections), and the escapes of
//! GitHub's workflow commands.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::event::Event;
use crate::report::{Labels, escape_controls, of};

/// Which runner's folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// GitHub Actions: `::group::TITLE` … `::endgroup::`.
    Github,
    /// GitLab CI: `section_start` … `section_end`.
    Gitlab,
}

/// Puts each attempt in a fold of the log: opened when the attempt starts,
/// closed by the next event (the one that tells how it ended), before that
/// event's own line, so that the line stays visible outside the fold.
pub struct Folds {
    runner: Runner,
    labels: Labels,
    /// Names GitLab's sections, which must be unique in a job log.
    pid: u32,
    /// The time of GitLab's section markers.
    clock: fn() -> SystemTime,
    /// The attempt whose fold is open.
    open: Option<u64>,
}

impl Folds {
    /// Folds for `runner`, titled with `labels` (the time, the name); the
    /// `pid` and `clock` name and time GitLab's sections.
    pub fn new(runner: Runner, labels: Labels, pid: u32, clock: fn() -> SystemTime) -> Folds {
        Folds {
            runner,
            labels,
            pid,
            clock,
            open: None,
        }
    }

    /// The markers to write before the event's own line: the end of the
    /// open fold, if any, and for an attempt that starts, its fold.
    pub fn event(&mut self, event: &Event<'_>) -> String {
        let mut marks = String::new();
        if let Some(attempt) = self.open.take() {
            match self.runner {
                Runner::Github => marks.push_str("::endgroup::\n"),
                Runner::Gitlab => marks.push_str(&section_end(self.unix_time(), self.pid, attempt)),
            }
        }
        if let Event::AttemptStarted {
            attempt,
            max_attempts,
        } = *event
        {
            let title = self
                .labels
                .apply(&format!("attempt {}", of(attempt, max_attempts)));
            match self.runner {
                Runner::Github => {
                    let _ = writeln!(marks, "::group::{}", escape_workflow(&title));
                }
                Runner::Gitlab => {
                    marks.push_str(&section_start(self.unix_time(), self.pid, attempt, &title));
                }
            }
            self.open = Some(attempt);
        }
        marks
    }

    fn unix_time(&self) -> u64 {
        (self.clock)()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// The name of an attempt's GitLab section: unique in the job log, as
/// GitLab needs, also when backoff runs twice in one job.
fn section_name(pid: u32, attempt: u64) -> String {
    format!("backoff_{pid}_attempt_{attempt}")
}

/// GitLab's start of a collapsed section, with its header line.
fn section_start(unix: u64, pid: u32, attempt: u64, title: &str) -> String {
    format!(
        "\x1b[0Ksection_start:{unix}:{}[collapsed=true]\r\x1b[0Kbackoff: {}\n",
        section_name(pid, attempt),
        escape_controls(title)
    )
}

/// GitLab's end of a section.
fn section_end(unix: u64, pid: u32, attempt: u64) -> String {
    format!(
        "\x1b[0Ksection_end:{unix}:{}\r\x1b[0K\n",
        section_name(pid, attempt)
    )
}

/// Escapes a GitHub Actions workflow command's message.
pub fn escape_workflow(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a GitHub Actions workflow command's property (`title=`), which
/// also ends at `,` and `:`.
pub fn escape_property(s: &str) -> String {
    escape_workflow(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Outcome;
    use crate::event::Ending as Why;
    use std::time::Duration;

    fn epoch() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_144_602)
    }

    fn started(attempt: u64) -> Event<'static> {
        Event::AttemptStarted {
            attempt,
            max_attempts: Some(7),
        }
    }

    fn gave_up() -> Event<'static> {
        Event::GaveUp {
            attempts: 2,
            total: Duration::from_millis(1200),
            outcome: Outcome::Exited(1),
            reason: Why::Exhausted,
            short_of: None,
        }
    }

    #[test]
    fn a_github_fold_opens_with_the_attempt_and_closes_before_the_next_event() {
        let labels = Labels {
            clock: None,
            name: Some("db, 50%".to_owned()),
        };
        let mut f = Folds::new(Runner::Github, labels, 7, epoch);
        assert_eq!(f.event(&started(2)), "::group::db, 50%25: attempt 2/7\n");
        assert_eq!(
            f.event(&started(3)),
            "::endgroup::\n::group::db, 50%25: attempt 3/7\n"
        );
        assert_eq!(f.event(&gave_up()), "::endgroup::\n");
        assert_eq!(f.event(&gave_up()), "");
    }

    #[test]
    fn gitlab_sections_are_named_by_pid_and_attempt_and_timed_in_unix_seconds() {
        let mut f = Folds::new(Runner::Gitlab, Labels::default(), 42, epoch);
        let start = f.event(&Event::AttemptStarted {
            attempt: 1,
            max_attempts: None,
        });
        assert_eq!(
            start,
            "\x1b[0Ksection_start:1796144602:backoff_42_attempt_1[collapsed=true]\r\x1b[0Kbackoff: attempt 1\n"
        );
        assert_eq!(
            f.event(&gave_up()),
            "\x1b[0Ksection_end:1796144602:backoff_42_attempt_1\r\x1b[0K\n"
        );
    }

    #[test]
    fn properties_escape_what_ends_them() {
        assert_eq!(escape_property("a:b,c%d\r\ne"), "a%3Ab%2Cc%25d%0D%0Ae");
        assert_eq!(escape_workflow("a:b,c%\n"), "a:b,c%25%0A");
    }
}
