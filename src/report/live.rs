//! The live status line on a terminal: during a delay of a second or more,
//! one line below backoff's others counts the time left down, rewritten in
//! place, and is cleared before anything else is written. The `console`
//! crate clears the line and cuts the text to the terminal's width; the
//! line stops three columns short of the width, so that what the terminal
//! echoes (`^C`) stays on it and is cleared with it. It is written through
//! backoff's stderr (`Std::Err`), which never waits long for a terminal
//! that does not take output, and only when the run tells it to: a wait
//! costs one wake-up a second.

use std::time::Duration;

use console::Term;

use crate::report::Std;

/// The status line, while one is shown.
pub struct Live {
    term: Term,
    shown: bool,
    /// The columns of the line shown: after the terminal shrinks, it may
    /// span several of its rows, all of which are cleared.
    written: usize,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            term: crate::sys::fd::term_on_stderr(Std::Err),
            shown: false,
            written: 0,
        }
    }
}

/// How many rows above the cursor a line of `written` columns spans on a
/// terminal `width` columns wide, once the terminal has wrapped it (as
/// tmux, xterm and VTE do when they shrink), the cursor after its end.
fn rows_above(written: usize, width: usize) -> usize {
    written.saturating_sub(1).checked_div(width).unwrap_or(0)
}

impl Live {
    /// Shows `head` then `tail` as the status line, in place of the one
    /// shown. A line too long for the terminal loses the end of its head
    /// (`…`), so that the tail, the time left, still shows.
    pub fn show(&mut self, head: &str, tail: &str) {
        // In the background of an interactive shell, the terminal is the
        // user's: nothing is drawn (nor cleared) over the prompt.
        if !crate::sys::fd::stderr_in_foreground() {
            self.shown = false;
            return;
        }
        // Three columns short of the width (80 where it is unknown): room
        // for an echoed `^C` and the cursor, so that nothing wraps.
        let columns = usize::from(self.term.size_checked().map_or(80, |(_, w)| w));
        let width = columns.saturating_sub(3);
        let tail_width = console::measure_text_width(tail);
        let line = if tail_width + 10 <= width {
            format!(
                "{}{tail}",
                console::truncate_str(head, width - tail_width, "…")
            )
        } else {
            console::truncate_str(&format!("{head}{tail}"), width, "…").into_owned()
        };
        self.erase(columns);
        let _ = self.term.write_str(&line);
        self.shown = true;
        self.written = console::measure_text_width(&line);
    }

    /// Clears the line shown, on every row of the terminal it now spans,
    /// leaving the cursor at the start of the first.
    fn erase(&mut self, columns: usize) {
        let _ = self.term.clear_line();
        if self.shown {
            let above = rows_above(self.written, columns);
            if above > 0 {
                let _ = self.term.clear_last_lines(above);
            }
        }
    }

    /// Starts the next status line on a line of its own: after a hook,
    /// whose output may have left the cursor anywhere on a line, so that
    /// the status line never writes over it.
    pub fn new_line(&mut self) {
        if !self.shown {
            let _ = self.term.write_line("");
        }
    }

    /// Clears the status line, if one is shown, leaving the cursor at the
    /// start of its (now empty) line.
    pub fn clear(&mut self) {
        if self.shown {
            let columns = usize::from(self.term.size_checked().map_or(80, |(_, w)| w));
            self.erase(columns);
            self.shown = false;
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The time left as the line shows it: whole seconds, rounded up (`12s`,
/// `4m 59s`), so that it reaches `1s`, never `0s`, before the attempt.
pub fn seconds_left(left: Duration) -> String {
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    if secs < 60 {
        format!("{secs}s")
    } else {
        humantime::format_duration(Duration::from_secs(secs)).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_wider_than_the_terminal_spans_the_rows_above_the_cursor() {
        assert_eq!(rows_above(0, 80), 0);
        assert_eq!(rows_above(77, 80), 0);
        assert_eq!(rows_above(80, 80), 0);
        assert_eq!(rows_above(81, 80), 1);
        assert_eq!(rows_above(97, 40), 2);
        assert_eq!(rows_above(97, 0), 0);
    }

    #[test]
    fn the_time_left_is_rounded_up_to_whole_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(seconds_left(ms(12_000)), "12s");
        assert_eq!(seconds_left(ms(11_001)), "12s");
        assert_eq!(seconds_left(ms(1)), "1s");
        assert_eq!(seconds_left(ms(299_500)), "5m");
        assert_eq!(seconds_left(ms(299_000)), "4m 59s");
    }
}
