//! Which preset a run uses, what it adds to the command's arguments, and
//! what it, or an option that reads the command's output, cannot do for
//! the command at hand: said once at the start of the run (`notices`), so
//! that no protection is off without a word. Pure: words in, answers out.
//!
//! A preset is the one `--preset` names, else the one of the program's
//! name: curl, wget or git, however the program is given (`curl`,
//! `/usr/bin/curl`, `./wget`). `--preset none` turns it off.

use std::ffi::OsString;

use crate::classify::{Applied, Preset, Source, is_program};
use crate::wget::Tries;
use crate::{curl, wget};

/// The preset of a run: the one `--preset` names (`Some(None)` for
/// `--preset none`), else the one of the program's name, if it has one.
pub fn choose(given: Option<Option<Preset>>, command: &[OsString]) -> Option<Applied> {
    match given {
        Some(preset) => preset.map(|preset| Applied {
            preset,
            from: Source::Option,
        }),
        None => command
            .first()
            .and_then(Preset::of_program)
            .map(|preset| Applied {
                preset,
                from: Source::Program,
            }),
    }
}

/// Whether the command is the preset's own program, whose arguments the
/// curl and wget presets read.
pub fn reads(preset: Preset, command: &[OsString]) -> bool {
    named(command, preset.name())
}

/// Whether the command's program is `name`.
fn named(command: &[OsString], name: &str) -> bool {
    command.first().is_some_and(|p| is_program(p, name))
}

/// The words the preset adds before the command's own arguments:
/// `--tries=1` for a wget given no number of tries, whose own default of
/// 20 would run inside backoff's retries (on the command line it wins
/// over any wgetrc).
pub fn added_arguments(preset: Option<Preset>, command: &[OsString]) -> Vec<OsString> {
    match preset {
        Some(Preset::Wget)
            if reads(Preset::Wget, command) && wget::tries(command) == Tries::Default =>
        {
            vec![OsString::from("--tries=1")]
        }
        _ => Vec::new(),
    }
}

/// How a run that gave backoff no limit of its own is told to make one
/// attempt.
pub const ONE_ATTEMPT: &str = "give backoff --attempts 1";

/// What a run is set to do, as far as `notices` needs to know.
#[derive(Debug, Clone, Copy)]
// Each flag is an option of its own, not a state in disguise.
#[allow(clippy::struct_excessive_bools)]
pub struct Setting<'a> {
    /// The preset, and where it came from.
    pub applied: Option<Applied>,
    /// The command and its arguments.
    pub command: &'a [OsString],
    /// Attempts in all; `None` without a limit.
    pub attempts: Option<u64>,
    /// How backoff is told to make one attempt, on its command line as
    /// given (`give backoff --attempts 1`, `make backoff's --max-retries
    /// 0`); `None` where backoff retries no failure (`--until-failure`),
    /// so that the command's own retries multiply nothing.
    pub one_attempt: Option<&'static str>,
    /// `--retry-after` given itself (not implied by a preset).
    pub retry_after: bool,
    /// `--retry-after-pattern` given: its value may be anywhere, and the
    /// header is not looked for.
    pub pattern: bool,
    /// `--hold-stdout` given itself.
    pub hold_stdout: bool,
    /// The curl preset has curl dump the headers to a file of its own.
    pub dump_headers: bool,
}

/// What the preset, `--retry-after` or the command's own retries leave
/// undone or multiply, each said in one line with its fix. A run of one
/// attempt retries nothing: what a preset does for retries, a hint for
/// the delay before one, retries to multiply, none of it is lost there.
pub fn notices(s: &Setting<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    if s.attempts == Some(1) {
        return lines;
    }
    let program = s.command.first().map(|p| p.to_string_lossy().into_owned());
    let program = program.as_deref().unwrap_or_default();
    if let Some(applied) = s.applied {
        lines.extend(unread(applied, program, s));
        if applied.preset == Preset::Curl
            && named(s.command, "curl")
            && !curl::fails_on_http_errors(s.command)
        {
            lines.push(format!(
                "{}: curl runs without -f (--fail), so an HTTP error exits 0 and is not retried; add -f",
                label(applied)
            ));
        }
        if applied.preset == Preset::Wget
            && named(s.command, "wget")
            && wget::hides_status(s.command)
        {
            lines.push(format!(
                "{}: wget -q prints no HTTP status, so a 404 is retried like a 503 (wget exits 8 for both); use -nv instead of -q",
                label(applied)
            ));
        }
    }
    // Whose wish it is to read a server's hint in the headers.
    let wisher = if s.pattern {
        None
    } else if s.retry_after {
        Some("--retry-after".to_owned())
    } else {
        // A preset for another program wishes for nothing there.
        s.applied.filter(|a| reads(a.preset, s.command)).map(label)
    };
    if let Some(who) = wisher {
        lines.extend(unseen_headers(&who, s));
    }
    lines.extend(nested_retries(s));
    lines
}

/// How a preset is named in a line: as the user gave it, or as backoff
/// chose it.
fn label(applied: Applied) -> String {
    match applied.from {
        Source::Option => format!("--preset {}", applied.preset.name()),
        Source::Program => format!("preset {} (from the program's name)", applied.preset.name()),
    }
}

/// A preset given for a program whose arguments it cannot read: which of
/// its rules still apply, which cannot, and the fix. The git preset reads
/// git's words, not its arguments: through a shell or a script, it does
/// all it does.
fn unread(applied: Applied, program: &str, s: &Setting<'_>) -> Option<String> {
    let preset = applied.preset;
    let name = preset.name();
    // Another preset's program: this one's rules mean nothing there.
    if let Some(own) = s.command.first().and_then(Preset::of_program)
        && own != preset
    {
        let own = own.name();
        return Some(format!(
            "--preset {name} is for {name}, and the command is {own}, whose exit codes and messages mean other things; drop --preset {name}, and {own}'s own preset applies"
        ));
    }
    if preset == Preset::Git || reads(preset, s.command) {
        return None;
    }
    let lost = match preset {
        Preset::Curl => {
            let (headers, body) = if s.hold_stdout {
                (" nor", "")
            } else {
                ("", ", nor hold the body back")
            };
            format!(
                "guard against sending a POST again,{headers} read the response headers curl prints only when asked (Retry-After, rate limits){body}"
            )
        }
        _ => "turn wget's own retries off (--tries=1)".to_owned(),
    };
    Some(format!(
        "--preset {name} cannot read the arguments of '{program}', only {name}'s: its rules on exit codes and HTTP statuses apply, but it cannot {lost}; run {name} directly: backoff -- {name} ARGS..."
    ))
}

/// A wish to read a server's hint (`who`: `--retry-after`, or a preset)
/// for a program that prints no header line where backoff reads it.
fn unseen_headers(who: &str, s: &Setting<'_>) -> Option<String> {
    let unseen = "a server's Retry-After and rate limits go unseen";
    if named(s.command, "curl") && !s.dump_headers {
        if let Some(file) = curl::header_file(s.command) {
            let fix = if s.applied.is_some_and(|a| a.preset == Preset::Curl) {
                "use -D /dev/stderr, or drop -D and the preset reads them"
            } else {
                "use -D /dev/stderr"
            };
            return Some(format!(
                "{who}: curl writes the response headers to '{file}' (-D), where backoff does not read them, so {unseen}; {fix}"
            ));
        }
        if !curl::heads_seen(s.command) {
            return Some(format!(
                "{who}: curl prints no response headers without -i, -v or -D, so {unseen}; add -D /dev/stderr"
            ));
        }
    }
    // A wget preset that applied itself by the program's name, unasked
    // for a server's hint, says nothing of it: every plain `wget -q` would
    // otherwise carry a line (-v says it, and the guide).
    let unasked = !s.retry_after && s.applied.is_some_and(|a| a.from == Source::Program);
    if named(s.command, "wget") && !wget::shows_headers(s.command) && !unasked {
        return Some(format!(
            "{who}: wget prints no response headers without -S (--server-response), so {unseen}; add -S"
        ));
    }
    None
}

/// The command's own retries inside backoff's: the product, and the fix.
fn nested_retries(s: &Setting<'_>) -> Option<String> {
    let one_attempt = s.one_attempt?;
    let unlimited = s.attempts.is_none();
    let (program, tries, what, fix) = if named(s.command, "curl") {
        let retries = curl::retries(s.command).filter(|&n| n > 0)?;
        let mut what = vec![format!("--retry {retries}")];
        what.extend(curl::retries_more(s.command).into_iter().map(str::to_owned));
        let fix = if unlimited {
            "drop --retry".to_owned()
        } else {
            format!("drop --retry, or {one_attempt}")
        };
        ("curl", Some(retries.saturating_add(1)), what, fix)
    } else if named(s.command, "wget") {
        let preset_added = s
            .applied
            .is_some_and(|a| !added_arguments(Some(a.preset), s.command).is_empty());
        let (tries, given) = match wget::tries(s.command) {
            Tries::Default if !preset_added => (
                Some(wget::DEFAULT_TRIES),
                format!("its default --tries={}", wget::DEFAULT_TRIES),
            ),
            Tries::Given(tries, given) if tries != Some(1) => (tries, given),
            _ => return None,
        };
        let mut what = vec![given];
        what.extend(wget::retries_more(s.command));
        let fix = if unlimited {
            "give wget --tries=1".to_owned()
        } else {
            format!("give wget --tries=1, or {one_attempt}")
        };
        ("wget", tries, what, fix)
    } else {
        return None;
    };
    let total = match (s.attempts, tries) {
        (Some(a), Some(t)) => format!("up to {} requests", a.saturating_mul(t)),
        _ => "requests without limit".to_owned(),
    };
    let attempts = s.attempts.map_or_else(
        || "no limit of attempts".to_owned(),
        |a| format!("{a} attempts"),
    );
    let tries = tries.map_or_else(|| "no limit".to_owned(), |t| t.to_string());
    Some(format!(
        "{program}'s own retries run inside backoff's: {total}: {attempts} × {program}'s {tries} ({}); {fix}",
        what.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    /// A setting of `command` with `attempts`, the preset chosen as by
    /// the program's name, dumping curl's headers as the curl preset does
    /// when curl shows none.
    fn setting(command: &[OsString], attempts: Option<u64>) -> Setting<'_> {
        let applied = choose(None, command);
        Setting {
            applied,
            command,
            attempts,
            one_attempt: Some(ONE_ATTEMPT),
            retry_after: false,
            pattern: false,
            hold_stdout: false,
            dump_headers: applied.is_some_and(|a| a.preset == Preset::Curl)
                && !curl::shows_headers(command),
        }
    }

    #[test]
    fn the_program_chooses_the_preset_unless_the_option_does() {
        let from = |given, line: &str| choose(given, &words(line));
        for (line, preset) in [
            ("curl -fsS http://h/", Preset::Curl),
            ("/usr/bin/curl -fsS http://h/", Preset::Curl),
            ("./wget -q http://h/", Preset::Wget),
            ("git push", Preset::Git),
        ] {
            assert_eq!(
                from(None, line),
                Some(Applied {
                    preset,
                    from: Source::Program
                }),
                "{line}"
            );
        }
        for line in ["sh -c curl", "curl.sh", "curlx", "gitk", ""] {
            assert_eq!(from(None, line), None, "{line}");
        }
        assert_eq!(from(Some(None), "curl http://h/"), None);
        assert_eq!(
            from(Some(Some(Preset::Wget)), "curl http://h/"),
            Some(Applied {
                preset: Preset::Wget,
                from: Source::Option
            })
        );
    }

    #[test]
    fn the_wget_preset_turns_wgets_own_retries_off_unless_told_a_number() {
        let added = |line: &str| added_arguments(Some(Preset::Wget), &words(line));
        assert_eq!(added("wget -q http://h/"), ["--tries=1"]);
        assert!(added("wget -t 3 http://h/").is_empty());
        assert!(added("wget -e tries=3 http://h/").is_empty());
        assert!(added("sh -c wget").is_empty());
        assert!(added_arguments(Some(Preset::Curl), &words("wget -q")).is_empty());
        assert!(added_arguments(None, &words("wget -q")).is_empty());
    }

    #[test]
    fn nested_retries_are_said_with_their_product() {
        let c = words("curl -fsS --retry 3 http://h/");
        assert_eq!(
            notices(&setting(&c, Some(4))),
            [
                "curl's own retries run inside backoff's: up to 16 requests: 4 attempts × curl's 4 (--retry 3); drop --retry, or give backoff --attempts 1"
            ]
        );
        assert_eq!(
            notices(&setting(&c, None)),
            [
                "curl's own retries run inside backoff's: requests without limit: no limit of attempts × curl's 4 (--retry 3); drop --retry"
            ]
        );
        assert!(notices(&setting(&c, Some(1))).is_empty());
        // Where backoff retries no failure, nothing multiplies.
        let until_failure = Setting {
            one_attempt: None,
            ..setting(&c, Some(4))
        };
        assert!(notices(&until_failure).is_empty());
        let c = words("curl -fsS --retry 1 --retry-all-errors http://h/");
        assert!(
            notices(&setting(&c, Some(2)))[0].contains(
                "up to 4 requests: 2 attempts × curl's 2 (--retry 1, --retry-all-errors)"
            )
        );
        // Without --retry, curl's other retry flags do nothing.
        let c = words("curl -fsS --retry-all-errors http://h/");
        assert!(notices(&setting(&c, Some(7))).is_empty());
        // wget: what it was given, or its default when the preset is off.
        let w = words("wget -q -S --tries=3 --retry-connrefused http://h/");
        assert_eq!(
            notices(&setting(&w, Some(7))),
            [
                "wget's own retries run inside backoff's: up to 21 requests: 7 attempts × wget's 3 (--tries=3, --retry-connrefused); give wget --tries=1, or give backoff --attempts 1"
            ]
        );
        let w = words("wget -q -S http://h/");
        assert!(
            notices(&setting(&w, Some(7))).is_empty(),
            "the preset adds --tries=1"
        );
        let off = Setting {
            applied: None,
            ..setting(&w, Some(7))
        };
        assert_eq!(
            notices(&off),
            [
                "wget's own retries run inside backoff's: up to 140 requests: 7 attempts × wget's 20 (its default --tries=20); give wget --tries=1, or give backoff --attempts 1"
            ]
        );
        let w = words("wget -S -t inf http://h/");
        assert!(
            notices(&setting(&w, Some(3)))[0]
                .contains("requests without limit: 3 attempts × wget's no limit (--tries=inf)")
        );
    }

    #[test]
    fn a_wish_for_headers_a_program_does_not_print_is_said() {
        let c = words("curl -fsS http://h/");
        let explicit = |command, applied| Setting {
            applied,
            retry_after: true,
            dump_headers: false,
            ..setting(command, Some(7))
        };
        assert_eq!(
            notices(&explicit(&c, None)),
            [
                "--retry-after: curl prints no response headers without -i, -v or -D, so a server's Retry-After and rate limits go unseen; add -D /dev/stderr"
            ]
        );
        let shown = words("curl -fsS -D /dev/stderr http://h/");
        assert!(notices(&explicit(&shown, None)).is_empty());
        // The curl preset dumps them itself.
        assert!(notices(&setting(&c, Some(7))).is_empty());
        // Unless curl writes them to a file of the user's.
        let file = words("curl -fsS -D h.txt http://h/");
        assert_eq!(
            notices(&setting(&file, Some(7))),
            [
                "preset curl (from the program's name): curl writes the response headers to 'h.txt' (-D), where backoff does not read them, so a server's Retry-After and rate limits go unseen; use -D /dev/stderr, or drop -D and the preset reads them"
            ]
        );
        let w = words("wget -nv http://h/");
        // A preset that applied itself was not asked for the hint.
        assert!(notices(&setting(&w, Some(7))).is_empty());
        assert_eq!(
            notices(&explicit(&w, choose(None, &w))),
            [
                "--retry-after: wget prints no response headers without -S (--server-response), so a server's Retry-After and rate limits go unseen; add -S"
            ]
        );
        // A pattern may find its value anywhere: nothing is said.
        let pattern = Setting {
            pattern: true,
            ..explicit(&c, None)
        };
        assert!(notices(&pattern).is_empty());
        // Nor of a program backoff does not know.
        assert!(notices(&explicit(&words("./fetch http://h/"), None)).is_empty());
    }

    #[test]
    fn a_preset_given_for_a_command_it_cannot_read_says_what_is_lost() {
        let sh = vec![
            OsString::from("sh"),
            OsString::from("-c"),
            OsString::from("curl -fsS -d x=1 http://h/"),
        ];
        let given = |preset| Setting {
            applied: Some(Applied {
                preset,
                from: Source::Option,
            }),
            ..setting(&sh, Some(7))
        };
        assert_eq!(
            notices(&given(Preset::Curl)),
            [
                "--preset curl cannot read the arguments of 'sh', only curl's: its rules on exit codes and HTTP statuses apply, but it cannot guard against sending a POST again, read the response headers curl prints only when asked (Retry-After, rate limits), nor hold the body back; run curl directly: backoff -- curl ARGS..."
            ]
        );
        assert!(notices(&given(Preset::Wget))[0].starts_with(
            "--preset wget cannot read the arguments of 'sh', only wget's: its rules on exit codes and HTTP statuses apply, but it cannot turn wget's own retries off (--tries=1)"
        ));
        // git's words are read wherever they come from.
        assert!(notices(&given(Preset::Git)).is_empty());
        // One attempt retries nothing: nothing is lost.
        let once = Setting {
            attempts: Some(1),
            ..given(Preset::Curl)
        };
        assert!(notices(&once).is_empty());
    }

    #[test]
    fn a_curl_that_does_not_fail_on_http_errors_is_said() {
        let c = words("curl -sS http://h/");
        assert_eq!(
            notices(&setting(&c, Some(7))),
            [
                "preset curl (from the program's name): curl runs without -f (--fail), so an HTTP error exits 0 and is not retried; add -f"
            ]
        );
    }

    #[test]
    fn a_preset_given_for_another_presets_program_is_said() {
        let c = words("curl -fsS http://h/");
        let given = Setting {
            applied: choose(Some(Some(Preset::Wget)), &c),
            ..setting(&c, Some(7))
        };
        assert_eq!(
            notices(&given),
            [
                "--preset wget is for wget, and the command is curl, whose exit codes and messages mean other things; drop --preset wget, and curl's own preset applies"
            ]
        );
        let g = words("git fetch");
        let given = Setting {
            applied: choose(Some(Some(Preset::Curl)), &g),
            ..setting(&g, Some(7))
        };
        assert!(
            notices(&given)[0].starts_with("--preset curl is for curl, and the command is git")
        );
        // Nor is the wrong preset's wish for headers said.
        let c = words("curl -fsS http://h/");
        let given = Setting {
            applied: choose(Some(Some(Preset::Git)), &c),
            ..setting(&c, Some(7))
        };
        assert_eq!(notices(&given).len(), 1, "{:?}", notices(&given));
    }

    #[test]
    fn a_quiet_wget_that_hides_the_status_is_said() {
        let line = "preset wget (from the program's name): wget -q prints no HTTP status, so a 404 is retried like a 503 (wget exits 8 for both); use -nv instead of -q";
        let said = |line: &str| notices(&setting(&words(line), Some(7)));
        assert_eq!(said("wget -q -O - http://h/"), [line]);
        assert_eq!(said("wget -qO- http://h/"), [line]);
        // -S shows the status line, -q or not; -nv the error line.
        assert!(said("wget -q -S -O - http://h/").is_empty());
        assert!(said("wget -nv -O - http://h/").is_empty());
        assert!(said("wget -q --no-quiet http://h/").is_empty());
    }
}
