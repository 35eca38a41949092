//! The countdown line on a terminal: backoff runs in a real terminal
//! emulator (a tmux server of the test's own, on its own socket), and the
//! test reads the screen as a person would see it.

use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{PATIENCE, TempDir, backoff, bin};

/// A tmux server of one test, with one window running one command; ended
/// when dropped.
struct Terminal {
    socket: String,
}

impl Terminal {
    /// Starts `argv` in a terminal `width` columns wide, with `TERM` as
    /// tmux sets it, and the window kept when the command ends.
    fn start(name: &str, width: u16, argv: &[String]) -> Terminal {
        let term = Terminal {
            socket: format!("backoff-test-{}-{name}", std::process::id()),
        };
        // The window stays when the command ends (set before it starts).
        let dir = TempDir::new("tmux");
        let conf = dir.join("tmux.conf");
        std::fs::write(&conf, "set-option -g remain-on-exit on\n").unwrap();
        let mut cmd = term.tmux();
        // sh tells the command's status (a trap keeps it alive through a
        // Ctrl-C, and is reset to the default for the command).
        cmd.arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-x"])
            .arg(width.to_string())
            .args(["-y", "20", "--", "sh", "-c"])
            .arg(format!("trap : INT; \"$@\"; echo \"{ENDED}$?\""))
            .arg("sh")
            .args(argv);
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux: {out:?}");
        term
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        crate::support::plain(&mut cmd)
            .args(["-L", &self.socket])
            .env_remove("TMUX");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.tmux().args(args).output().expect("run tmux")
    }

    /// The screen's lines (with those scrolled off it), without tmux's
    /// own "Pane is dead" line and the empty lines at the bottom.
    fn screen(&self) -> Vec<String> {
        let out = self.run(&["capture-pane", "-p", "-S", "-"]);
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_owned())
            .filter(|l| !l.starts_with("Pane is dead"))
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }

    /// Waits until a line of the screen satisfies `cond`, and returns the
    /// screen then.
    fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if screen.iter().any(|l| cond(l)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{}",
                screen.join("\n")
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The command's exit status as `sh` tells it (`$?`, 130 after a
    /// SIGINT), once it has ended.
    fn ended(&self) -> Option<String> {
        let screen = self.screen();
        let last = screen.last()?;
        last.strip_prefix(ENDED).map(str::to_owned)
    }

    /// Waits until the command has ended, and returns the screen (without
    /// the line telling its status) and its status then.
    fn wait_end(&self) -> (Vec<String>, String) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.ended() {
                let mut screen = self.screen();
                screen.pop();
                return (screen, status);
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the end; the screen:\n{}",
                self.screen().join("\n")
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What `sh` prints after the command, before its exit status. (tmux's own
/// record of a command's status can miss one that exits quickly.)
const ENDED: &str = "ended with status ";

impl Drop for Terminal {
    fn drop(&mut self) {
        // Never a panic here: one while a failed test unwinds aborts them all.
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// Whether tmux is missing: then a test that needs it says so on one line
/// and is skipped.
fn without_tmux(test: &str) -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped {test}: tmux is not installed (apt-get install tmux)");
    }
    !found
}

/// backoff's arguments, then a command that prints `output of run N` and
/// fails the first time it runs.
fn flaky(dir: &TempDir, options: &[&str]) -> Vec<String> {
    let counter = dir.join("runs");
    let script = format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{0}'; \
         echo \"output of run $n\"; [ $n -ge 2 ]",
        counter.display()
    );
    let mut argv = vec![bin().display().to_string()];
    argv.extend(options.iter().map(|s| (*s).to_owned()));
    argv.extend(["--".into(), "sh".into(), "-c".into(), script]);
    argv
}

/// The countdown names what it waits for, not the failure again.
fn is_countdown(line: &str) -> bool {
    line.starts_with("backoff: next attempt 2/7 in ")
}

#[test]
fn a_delay_counts_down_in_place_and_is_cleared_before_the_next_attempt() {
    if without_tmux("a_delay_counts_down_in_place_and_is_cleared_before_the_next_attempt") {
        return;
    }
    let dir = TempDir::new("live");
    let term = Terminal::start(
        "countdown",
        100,
        &flaky(
            &dir,
            &[
                "--delays",
                "3s",
                "--jitter",
                "none",
                "--on-retry",
                // Output that does not end its line stays on the screen.
                "printf 'the hook ran'",
            ],
        ),
    );
    let screen = term.wait_for("the countdown", is_countdown);
    let line = screen.iter().find(|l| is_countdown(l)).unwrap();
    let left = line.rsplit(' ').next().unwrap();
    assert!(["3s", "2s", "1s"].contains(&left), "{line}");
    let (end, status) = term.wait_end();
    assert_eq!(status, "0");
    // The countdown line is gone, the record of the failure stays, and the
    // next attempt's output starts a line of its own, intact.
    assert_eq!(end[0], "output of run 1", "{end:#?}");
    assert!(
        end[1].starts_with("backoff: attempt 1/7 failed (exit 1) after ")
            && end[1].ends_with("; retrying in 3.00s"),
        "{end:#?}"
    );
    // The countdown starts after the hook's output.
    assert_eq!(end[2], "the hook ran", "{end:#?}");
    assert_eq!(end[3], "output of run 2", "{end:#?}");
    assert_eq!(end.len(), 4, "nothing else: {end:#?}");
}

#[test]
fn ctrl_c_during_the_countdown_clears_it_with_what_the_terminal_echoed() {
    if without_tmux("ctrl_c_during_the_countdown_clears_it_with_what_the_terminal_echoed") {
        return;
    }
    let dir = TempDir::new("live-int");
    // Narrow, so the line is cut: what the terminal echoes must not wrap.
    let term = Terminal::start(
        "interrupt",
        30,
        &flaky(&dir, &["--delays", "30s", "--jitter", "none"]),
    );
    // Cut in its head, so that the time left still shows.
    let shows = |l: &str| {
        l.starts_with("backoff: next")
            && l.contains('…')
            && (l.ends_with(" in 30s") || l.ends_with(" in 29s"))
    };
    let screen = term.wait_for("the countdown", shows);
    let cut = screen.iter().find(|l| shows(l)).unwrap();
    assert!(cut.chars().count() <= 27, "{cut:?} leaves 3 columns free");
    let _ = term.run(&["send-keys", "C-c"]);
    let (end, status) = term.wait_end();
    assert_eq!(status, "130", "ended by SIGINT");
    let text = end.join("\n");
    assert!(!text.contains('…') && !text.contains("^C"), "{text}");
    // Lines longer than the terminal wrap at its 30 columns.
    assert!(
        end.concat()
            .contains("backoff: interrupted by SIGINT during the delay; not retrying"),
        "{text}"
    );
    assert!(!text.contains("output of run 2"), "{text}");
}

#[test]
fn quiet_and_dumb_terminals_get_no_countdown() {
    if without_tmux("quiet_and_dumb_terminals_get_no_countdown") {
        return;
    }
    for (name, options, env) in [
        ("quiet", &["-q"][..], None),
        ("dumb", &[][..], Some("TERM=dumb")),
    ] {
        let dir = TempDir::new("live-off");
        let mut options: Vec<&str> = options.to_vec();
        options.extend(["--delays", "1500ms", "--jitter", "none"]);
        let mut argv = flaky(&dir, &options);
        if let Some(env) = env {
            argv.splice(0..0, ["env".to_owned(), env.to_owned()]);
        }
        let term = Terminal::start(name, 100, &argv);
        // Between the two attempts, and after them, no countdown shows: the
        // screen is sampled until the command ends.
        let deadline = Instant::now() + PATIENCE;
        let mut during = 0;
        loop {
            let screen = term.screen();
            assert!(
                screen.iter().all(|l| !is_countdown(l)),
                "{name}: {screen:#?}"
            );
            let has = |l: &str| screen.iter().any(|s| s == l);
            if has("output of run 1") && !has("output of run 2") {
                during += 1;
            }
            if term.ended().is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: no end: {screen:#?}");
            thread::sleep(Duration::from_millis(20));
        }
        assert!(during > 0, "{name}: the screen was seen during the delay");
        let end = term.screen();
        assert!(
            end.contains(&"output of run 2".to_owned()),
            "{name}: {end:#?}"
        );
    }
}

#[test]
fn no_countdown_reaches_a_pipe() {
    let dir = TempDir::new("live-pipe");
    let argv = flaky(&dir, &["--delays", "1s", "--jitter", "none"]);
    let out = backoff(&argv[1..]).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_eq!(
        stderr.lines().count(),
        1,
        "only the failure's own line: {stderr:?}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\r'),
        "{stderr:?}"
    );
}

#[test]
fn after_the_terminal_shrinks_the_countdown_is_drawn_again_without_pieces_of_the_old() {
    if without_tmux(
        "after_the_terminal_shrinks_the_countdown_is_drawn_again_without_pieces_of_the_old",
    ) {
        return;
    }
    let dir = TempDir::new("live-resize");
    let name = "a name of some thirty columns";
    let term = Terminal::start(
        "resize",
        100,
        &flaky(
            &dir,
            &["--name", name, "--delays", "30s", "--jitter", "none"],
        ),
    );
    let countdown = |l: &str| l.starts_with(&format!("backoff: {name}: next attempt 2/7 in "));
    term.wait_for("the countdown", countdown);
    let out = term.run(&["resize-window", "-x", "40"]);
    assert!(out.status.success(), "tmux: {out:?}");
    // Drawn again to the new width, its head cut.
    let cut = |l: &str| {
        l.starts_with("backoff: a name")
            && l.contains('…')
            && (l.ends_with(" in 30s") || l.ends_with(" in 29s"))
    };
    let screen = term.wait_for("the countdown cut to 40 columns", cut);
    let row = screen.iter().find(|l| cut(l)).unwrap();
    assert!(row.chars().count() <= 37, "{row:?}");
    // The failure's own line (wrapped at 40 columns) and the countdown
    // start rows with `backoff: `; a piece of the old countdown would too.
    let starts: Vec<&String> = screen
        .iter()
        .filter(|l| l.starts_with("backoff: "))
        .collect();
    assert_eq!(starts.len(), 2, "{screen:#?}");
    assert!(
        !screen.iter().any(|l| l.contains("next attempt") && !cut(l)),
        "{screen:#?}"
    );
    let _ = term.run(&["send-keys", "C-c"]);
    term.wait_end();
}

#[test]
fn a_backoff_in_the_background_of_an_interactive_shell_draws_no_countdown() {
    if without_tmux("a_backoff_in_the_background_of_an_interactive_shell_draws_no_countdown") {
        return;
    }
    let dir = TempDir::new("live-bg");
    let shell = [
        "env".to_owned(),
        "PS1=$ ".to_owned(),
        "bash".to_owned(),
        "--norc".to_owned(),
        "--noprofile".to_owned(),
        "-i".to_owned(),
    ];
    let term = Terminal::start("background", 100, &shell);
    term.wait_for("the prompt", |l| l.starts_with('$'));
    let argv = flaky(&dir, &["--delays", "2s", "--jitter", "none"]);
    let line: Vec<String> = argv
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let job = format!("{} &", line.join(" "));
    let out = term.run(&["send-keys", "-l", &job]);
    assert!(out.status.success(), "tmux: {out:?}");
    let _ = term.run(&["send-keys", "Enter"]);
    // From the failure of the first run to the output of the second, the
    // screen is sampled: no countdown shows.
    term.wait_for("the failure", |l| {
        l.starts_with("backoff: attempt 1/7 failed (exit 1) after ")
    });
    let deadline = Instant::now() + PATIENCE;
    loop {
        let screen = term.screen();
        assert!(screen.iter().all(|l| !is_countdown(l)), "{screen:#?}");
        if screen.iter().any(|l| l == "output of run 2") {
            break;
        }
        assert!(Instant::now() < deadline, "no second run: {screen:#?}");
        thread::sleep(Duration::from_millis(20));
    }
    let _ = term.run(&["send-keys", "exit", "Enter"]);
}

#[test]
fn in_the_ci_formats_a_terminal_stays_the_command_s_terminal() {
    if without_tmux("in_the_ci_formats_a_terminal_stays_the_command_s_terminal") {
        return;
    }
    for format in ["github", "gitlab"] {
        let argv: Vec<String> = [
            &bin().display().to_string(),
            "--log-format",
            format,
            "--attempts",
            "1",
            "--",
            "sh",
            "-c",
            "if [ -t 1 ] && [ -t 2 ]; then echo 'both: terminals'; else echo 'both: not terminals'; fi",
        ]
        .map(str::to_owned)
        .to_vec();
        let term = Terminal::start(&format!("ci-{format}"), 100, &argv);
        let screen = term.wait_for("the command's line", |l| l.starts_with("both: "));
        assert!(
            screen.iter().any(|l| l == "both: terminals"),
            "{format}: {screen:#?}"
        );
        term.wait_end();
    }
}

#[test]
fn a_lock_lost_during_the_countdown_ends_the_wait_at_once() {
    if without_tmux("a_lock_lost_during_the_countdown_ends_the_wait_at_once") {
        return;
    }
    let dir = TempDir::new("live-lock");
    let store = dir.join("state");
    let store = store.to_str().unwrap();
    // A delay far longer than the test waits for the end.
    let term = Terminal::start(
        "lock-lost",
        100,
        &flaky(
            &dir,
            &[
                "--lock",
                "job",
                "--budget-dir",
                store,
                "--delays",
                "5m",
                "--jitter",
                "none",
            ],
        ),
    );
    term.wait_for("the countdown", is_countdown);
    std::fs::remove_file(format!("{store}/job.lock")).unwrap();
    let (end, status) = term.wait_end();
    assert_eq!(status, "75", "{end:#?}");
    assert!(
        end.iter()
            .any(|l| l.contains("lock 'job' was lost: its file")),
        "{end:#?}"
    );
}
