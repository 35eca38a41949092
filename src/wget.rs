//! What wget's command line asks for, as the wget preset needs to know it:
//! the words after the program, read as wget reads them into options
//! (`options`), and small questions over them. Pure: words in, answers
//! out. Only the command line is read: not `~/.wgetrc`, `/etc/wgetrc`,
//! `$WGETRC` nor a `--config` file, which the command line overrides.
//!
//! wget's forms (GNU `getopt_long`): long options with their value after
//! `=` or in the next word (`--tries=3`, `--tries 3`), any prefix of a long
//! option that names no other (`--tri=3`), `--no-` before a switch, and a
//! switch's `=on` or `=off`; short options alone or in a cluster (`-qS`),
//! a short option's value attached (`-t3`, `-qt3`) or in the next word
//! (`-t 3`); `-e COMMAND`, a command of wgetrc's (`-e tries=3`, whose name
//! ignores case, `-` and `_`); options after the URLs too, and none after
//! `--`. An option that takes a value takes the next word whatever it
//! looks like: in `-O -S`, `-S` is a file name.

use std::ffi::OsString;

use crate::argv::{self, Token};

/// One option of wget's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// The option's long name, however it was given: `-t`, `--tries`,
    /// `--tri` and `-e tries=…` are all `tries`.
    pub name: &'static str,
    /// The value of an option that takes one (`None` when it is missing at
    /// the end of the line), or a switch's `=on`.
    pub value: Option<String>,
    /// Whether a switch is turned on: false for `--no-NAME`, `=off`,
    /// `=no` and `=0`.
    pub on: bool,
}

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// A value, attached or in the next word.
    Value,
    /// Nothing but, in its long form, an optional `=on` or `=off`; it has
    /// a `--no-` form.
    Switch,
    /// An optional value, attached only (`--clobber`, `--parent`).
    Optional,
    /// Nothing (`--help`, `--version`).
    Nothing,
}

/// wget's options, in the order given, from its command line (`args`, the
/// program first). Words that are not options (the URLs) are left out,
/// and so are options wget does not know, which it refuses.
pub fn options(args: &[OsString]) -> Vec<Opt> {
    let tokens = argv::tokens(
        args,
        |long| {
            !long.contains('=')
                && long_option(long).is_some_and(|(_, _, takes)| takes == Takes::Value)
        },
        |letter| short_name(letter).is_some_and(|name| takes(name) == Takes::Value),
    );
    let mut opts = Vec::new();
    for token in tokens {
        match token {
            Token::Long(long, next) => {
                let (given, attached) = match long.split_once('=') {
                    Some((l, v)) => (l, Some(v.to_owned())),
                    None => (long.as_str(), next),
                };
                if let Some((name, negated, takes)) = long_option(given) {
                    push(&mut opts, name, attached, takes, negated);
                }
            }
            Token::Short(letter, value) => {
                if let Some(name) = short_name(letter) {
                    push(&mut opts, name, value, takes(name), false);
                }
            }
        }
    }
    opts
}

/// Adds the option `name` to `opts`: `-e`'s command as the option it
/// sets, a switch on or off as its value says.
fn push(opts: &mut Vec<Opt>, name: &'static str, value: Option<String>, takes: Takes, no: bool) {
    if name == "execute" {
        opts.extend(value.as_deref().and_then(command));
        return;
    }
    // A switch's value other than on or off is for the few that take a
    // number or a word (`--backups=3`), which count as on.
    let on = match (takes, &value) {
        (Takes::Switch, Some(v)) => boolean(v).unwrap_or(true),
        _ => !no,
    };
    let value = if takes == Takes::Switch { None } else { value };
    opts.push(Opt { name, value, on });
}

/// A wgetrc command (`tries = 3`) as the option it sets, for the commands
/// the preset asks about.
fn command(text: &str) -> Option<Opt> {
    let (name, value) = text.split_once('=')?;
    let name: String = name
        .trim()
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect();
    let value = value.trim();
    let (name, takes) = match name.as_str() {
        "tries" => ("tries", Takes::Value),
        "retryonhttperror" => ("retry-on-http-error", Takes::Value),
        "serverresponse" => ("server-response", Takes::Switch),
        "retryconnrefused" => ("retry-connrefused", Takes::Switch),
        "debug" => ("debug", Takes::Switch),
        _ => return None,
    };
    let on = takes != Takes::Switch || boolean(value)?;
    let value = (takes == Takes::Value).then(|| value.to_owned());
    Some(Opt { name, value, on })
}

/// A switch's value as wget reads it: `on`, `yes`, `1`, or `off`, `no`,
/// `0`, in any case.
fn boolean(value: &str) -> Option<bool> {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "on" | "yes" | "1" => Some(true),
        "off" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// The long option `given` names (whole, or a prefix of one name only),
/// whether it is a switch's `--no-` form, and what it takes.
fn long_option(given: &str) -> Option<(&'static str, bool, Takes)> {
    // Every name wget knows: its options, and the `--no-` form of each
    // switch.
    let names = LONG.iter().map(|&(n, t)| (n, false, t)).chain(
        LONG.iter()
            .filter(|(_, t)| *t == Takes::Switch)
            .map(|&(n, _)| (n, true, Takes::Nothing)),
    );
    let spelled = |(n, no, _): &(&str, bool, Takes)| {
        if *no {
            format!("no-{n}")
        } else {
            (*n).to_owned()
        }
    };
    let mut prefixed = Vec::new();
    for entry in names {
        let name = spelled(&entry);
        if name == given {
            return Some(resolved(entry));
        }
        if name.starts_with(given) {
            prefixed.push(entry);
        }
    }
    match prefixed[..] {
        [only] => Some(resolved(only)),
        _ => None,
    }
}

/// A long name's entry as `options` uses it: a `--no-` form is its
/// switch turned off.
fn resolved((name, no, takes): (&'static str, bool, Takes)) -> (&'static str, bool, Takes) {
    if no {
        (name, true, Takes::Switch)
    } else {
        (name, false, takes)
    }
}

/// What the option `name` takes.
fn takes(name: &str) -> Takes {
    LONG.iter()
        .find(|(n, _)| *n == name)
        .map_or(Takes::Nothing, |&(_, t)| t)
}

/// The long name of a short option, if wget has one.
fn short_name(letter: char) -> Option<&'static str> {
    SHORT
        .binary_search_by_key(&letter, |&(c, _)| c)
        .ok()
        .map(|i| SHORT[i].1)
}

/// How many times wget tries a download, as its command line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tries {
    /// No number given: wget's own default of 20, for the failures it
    /// retries by itself (not a refused connection, nor an HTTP error).
    Default,
    /// This many (`None`: no limit, from `0` or `inf`), and the option as
    /// it reads (`--tries=3`).
    Given(Option<u64>, String),
    /// A value wget refuses (it then runs nothing).
    Invalid,
}

/// wget's default number of tries.
pub const DEFAULT_TRIES: u64 = 20;

/// How many times wget tries, by the last `-t`/`--tries` (or `-e
/// tries=N`) of its command line.
pub fn tries(args: &[OsString]) -> Tries {
    let opts = options(args);
    let Some(opt) = opts.iter().rev().find(|o| o.name == "tries") else {
        return Tries::Default;
    };
    let text = opt.value.as_deref().unwrap_or_default().trim();
    let limit = if text.eq_ignore_ascii_case("inf") {
        None
    } else if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // Past u64, still a number of tries no run reaches.
        Some(text.parse::<u64>().unwrap_or(u64::MAX)).filter(|&n| n != 0)
    } else {
        return Tries::Invalid;
    };
    Tries::Given(limit, format!("--tries={text}"))
}

/// Whether the last of the switch `name` in `opts` is turned on.
fn last_switch(opts: &[Opt], name: &str) -> bool {
    opts.iter()
        .rev()
        .find(|o| o.name == name)
        .is_some_and(|o| o.on)
}

/// What widens the failures wget retries by itself: `--retry-connrefused`
/// and `--retry-on-http-error=CODES`, as they read.
pub fn retries_more(args: &[OsString]) -> Vec<String> {
    let opts = options(args);
    let mut more = Vec::new();
    if last_switch(&opts, "retry-connrefused") {
        more.push("--retry-connrefused".to_owned());
    }
    if let Some(codes) = opts
        .iter()
        .rev()
        .find(|o| o.name == "retry-on-http-error")
        .and_then(|o| o.value.as_deref())
        .filter(|c| !c.trim().is_empty())
    {
        more.push(format!("--retry-on-http-error={codes}"));
    }
    more
}

/// Whether wget prints the responses' headers, where backoff reads them
/// (on stderr): `-S`/`--server-response`, or `-d`/`--debug`, even with
/// `-q`.
pub fn shows_headers(args: &[OsString]) -> bool {
    let opts = options(args);
    last_switch(&opts, "server-response") || last_switch(&opts, "debug")
}

/// Whether wget prints nothing of an HTTP error: `-q` without `-S` hides
/// the `ERROR 404:` line and the status line that tell the error it exits
/// 8 for.
pub fn hides_status(args: &[OsString]) -> bool {
    let opts = options(args);
    last_switch(&opts, "quiet")
        && !(last_switch(&opts, "server-response") || last_switch(&opts, "debug"))
}

/// wget's long options and what each takes, sorted (from wget's own
/// table, with those of optional features).
const LONG: [(&str, Takes); 169] = [
    ("accept", Takes::Value),
    ("accept-regex", Takes::Value),
    ("adjust-extension", Takes::Switch),
    ("append-output", Takes::Value),
    ("ask-password", Takes::Switch),
    ("auth-no-challenge", Takes::Switch),
    ("background", Takes::Switch),
    ("backup-converted", Takes::Switch),
    ("backups", Takes::Switch),
    ("base", Takes::Value),
    ("bind-address", Takes::Value),
    ("bind-dns-address", Takes::Value),
    ("body-data", Takes::Value),
    ("body-file", Takes::Value),
    ("ca-certificate", Takes::Value),
    ("ca-directory", Takes::Value),
    ("cache", Takes::Switch),
    ("certificate", Takes::Value),
    ("certificate-type", Takes::Value),
    ("check-certificate", Takes::Switch),
    ("ciphers", Takes::Value),
    ("clobber", Takes::Optional),
    ("compression", Takes::Value),
    ("config", Takes::Value),
    ("connect-timeout", Takes::Value),
    ("content-disposition", Takes::Switch),
    ("content-on-error", Takes::Switch),
    ("continue", Takes::Switch),
    ("convert-file-only", Takes::Switch),
    ("convert-links", Takes::Switch),
    ("cookies", Takes::Switch),
    ("crl-file", Takes::Value),
    ("cut-dirs", Takes::Value),
    ("debug", Takes::Switch),
    ("default-page", Takes::Value),
    ("delete-after", Takes::Switch),
    ("directories", Takes::Switch),
    ("directory-prefix", Takes::Value),
    ("dns-cache", Takes::Switch),
    ("dns-servers", Takes::Value),
    ("dns-timeout", Takes::Value),
    ("domains", Takes::Value),
    ("dont-remove-listing", Takes::Nothing),
    ("dot-style", Takes::Value),
    ("egd-file", Takes::Value),
    ("exclude-directories", Takes::Value),
    ("exclude-domains", Takes::Value),
    ("execute", Takes::Value),
    ("follow-ftp", Takes::Switch),
    ("follow-tags", Takes::Value),
    ("force-directories", Takes::Switch),
    ("force-html", Takes::Switch),
    ("ftp-password", Takes::Value),
    ("ftp-user", Takes::Value),
    ("ftps-clear-data-connection", Takes::Switch),
    ("ftps-fallback-to-ftp", Takes::Switch),
    ("ftps-implicit", Takes::Switch),
    ("ftps-resume-ssl", Takes::Switch),
    ("glob", Takes::Switch),
    ("header", Takes::Value),
    ("help", Takes::Nothing),
    ("host-directories", Takes::Switch),
    ("hsts", Takes::Switch),
    ("hsts-file", Takes::Value),
    ("html-extension", Takes::Switch),
    ("htmlify", Takes::Switch),
    ("http-keep-alive", Takes::Switch),
    ("http-passwd", Takes::Value),
    ("http-password", Takes::Value),
    ("http-user", Takes::Value),
    ("https-only", Takes::Switch),
    ("if-modified-since", Takes::Switch),
    ("ignore-case", Takes::Switch),
    ("ignore-length", Takes::Switch),
    ("ignore-tags", Takes::Value),
    ("include-directories", Takes::Value),
    ("inet4-only", Takes::Switch),
    ("inet6-only", Takes::Switch),
    ("input-file", Takes::Value),
    ("input-metalink", Takes::Value),
    ("iri", Takes::Switch),
    ("keep-badhash", Takes::Switch),
    ("keep-session-cookies", Takes::Switch),
    ("level", Takes::Value),
    ("limit-rate", Takes::Value),
    ("load-cookies", Takes::Value),
    ("local-encoding", Takes::Value),
    ("max-redirect", Takes::Value),
    ("metalink-index", Takes::Value),
    ("metalink-over-http", Takes::Switch),
    ("method", Takes::Value),
    ("mirror", Takes::Switch),
    ("netrc", Takes::Switch),
    ("no", Takes::Value),
    ("no-clobber", Takes::Switch),
    ("no-config", Takes::Switch),
    ("no-parent", Takes::Switch),
    ("output-document", Takes::Value),
    ("output-file", Takes::Value),
    ("page-requisites", Takes::Switch),
    ("parent", Takes::Optional),
    ("passive-ftp", Takes::Switch),
    ("password", Takes::Value),
    ("pinnedpubkey", Takes::Value),
    ("post-data", Takes::Value),
    ("post-file", Takes::Value),
    ("prefer-family", Takes::Value),
    ("preferred-location", Takes::Value),
    ("preserve-permissions", Takes::Switch),
    ("private-key", Takes::Value),
    ("private-key-type", Takes::Value),
    ("progress", Takes::Value),
    ("protocol-directories", Takes::Switch),
    ("proxy", Takes::Switch),
    ("proxy-passwd", Takes::Value),
    ("proxy-password", Takes::Value),
    ("proxy-user", Takes::Value),
    ("proxy__compat", Takes::Value),
    ("quiet", Takes::Switch),
    ("quota", Takes::Value),
    ("random-file", Takes::Value),
    ("random-wait", Takes::Switch),
    ("read-timeout", Takes::Value),
    ("recursive", Takes::Switch),
    ("referer", Takes::Value),
    ("regex-type", Takes::Value),
    ("reject", Takes::Value),
    ("reject-regex", Takes::Value),
    ("rejected-log", Takes::Value),
    ("relative", Takes::Switch),
    ("remote-encoding", Takes::Value),
    ("remove-listing", Takes::Switch),
    ("report-speed", Takes::Switch),
    ("restrict-file-names", Takes::Switch),
    ("retr-symlinks", Takes::Switch),
    ("retry-connrefused", Takes::Switch),
    ("retry-on-http-error", Takes::Value),
    ("save-cookies", Takes::Value),
    ("save-headers", Takes::Switch),
    ("secure-protocol", Takes::Value),
    ("server-response", Takes::Switch),
    ("show-progress", Takes::Switch),
    ("span-hosts", Takes::Switch),
    ("spider", Takes::Switch),
    ("start-pos", Takes::Value),
    ("strict-comments", Takes::Switch),
    ("timeout", Takes::Value),
    ("timestamping", Takes::Switch),
    ("tries", Takes::Value),
    ("trust-server-names", Takes::Switch),
    ("unlink", Takes::Switch),
    ("use-askpass", Takes::Value),
    ("use-server-timestamps", Takes::Switch),
    ("user", Takes::Value),
    ("user-agent", Takes::Value),
    ("verbose", Takes::Switch),
    ("version", Takes::Nothing),
    ("wait", Takes::Value),
    ("waitretry", Takes::Value),
    ("warc-cdx", Takes::Switch),
    ("warc-compression", Takes::Switch),
    ("warc-dedup", Takes::Value),
    ("warc-digests", Takes::Switch),
    ("warc-file", Takes::Value),
    ("warc-header", Takes::Value),
    ("warc-keep-log", Takes::Switch),
    ("warc-max-size", Takes::Value),
    ("warc-tempdir", Takes::Value),
    ("xattr", Takes::Switch),
];

/// wget's short options and their long names, sorted.
const SHORT: [(char, &str); 41] = [
    ('4', "inet4-only"),
    ('6', "inet6-only"),
    ('A', "accept"),
    ('B', "base"),
    ('D', "domains"),
    ('E', "adjust-extension"),
    ('F', "force-html"),
    ('H', "span-hosts"),
    ('I', "include-directories"),
    ('K', "backup-converted"),
    ('L', "relative"),
    ('N', "timestamping"),
    ('O', "output-document"),
    ('P', "directory-prefix"),
    ('Q', "quota"),
    ('R', "reject"),
    ('S', "server-response"),
    ('T', "timeout"),
    ('U', "user-agent"),
    ('V', "version"),
    ('X', "exclude-directories"),
    ('Y', "proxy__compat"),
    ('a', "append-output"),
    ('b', "background"),
    ('c', "continue"),
    ('d', "debug"),
    ('e', "execute"),
    ('h', "help"),
    ('i', "input-file"),
    ('k', "convert-links"),
    ('l', "level"),
    ('m', "mirror"),
    ('n', "no"),
    ('o', "output-file"),
    ('p', "page-requisites"),
    ('q', "quiet"),
    ('r', "recursive"),
    ('t', "tries"),
    ('v', "verbose"),
    ('w', "wait"),
    ('x', "force-directories"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line `wget WORDS...`.
    fn wget(words: &[&str]) -> Vec<OsString> {
        ["wget"].iter().chain(words).map(OsString::from).collect()
    }

    #[test]
    fn the_tables_are_sorted_for_their_searches_and_name_each_other() {
        assert!(LONG.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(SHORT.windows(2).all(|w| w[0].0 < w[1].0));
        for (_, long) in SHORT {
            assert!(LONG.iter().any(|(n, _)| *n == long), "{long}");
        }
    }

    #[test]
    fn tries_are_read_in_every_form_wget_accepts() {
        let tries = |words: &[&str]| tries(&wget(words));
        let given = |n: u64, text: &str| Tries::Given(Some(n), text.to_owned());
        for (words, expected) in [
            (&["-t", "3"][..], given(3, "--tries=3")),
            (&["-t3"], given(3, "--tries=3")),
            (&["-qt3", "http://h/"], given(3, "--tries=3")),
            (&["--tries=3"], given(3, "--tries=3")),
            (&["--tries", "3"], given(3, "--tries=3")),
            (&["--tri=4"], given(4, "--tries=4")),
            (&["-e", "tries=5"], given(5, "--tries=5")),
            (&["-e", "TRIES = 6"], given(6, "--tries=6")),
            (&["--execute=tries=7"], given(7, "--tries=7")),
            // Options after the URL count; the last one wins.
            (
                &["http://h/", "-t", "2", "--tries=1"],
                given(1, "--tries=1"),
            ),
            (&["--tries=inf"], Tries::Given(None, "--tries=inf".into())),
            (&["-t", "0"], Tries::Given(None, "--tries=0".into())),
            (&["-t", "x"], Tries::Invalid),
            (&["-q", "http://h/"], Tries::Default),
            // A value is the next word whatever it looks like, and after
            // `--` nothing is an option.
            (&["-O", "-t3"], Tries::Default),
            (&["--", "-t3"], Tries::Default),
            // An ambiguous prefix is refused by wget, and read as nothing.
            (&["--tr=3"], Tries::Default),
        ] {
            assert_eq!(tries(words), expected, "{words:?}");
        }
    }

    #[test]
    fn headers_show_with_s_or_d_and_not_after_they_are_turned_off() {
        let shows = |words: &[&str]| shows_headers(&wget(words));
        for yes in [
            &["-S"][..],
            &["-qS"],
            &["--server-response"],
            &["--server"],
            &["--server-response=on"],
            &["-e", "server_response = on"],
            &["-d"],
            &["--no-server-response", "-S"],
        ] {
            assert!(shows(yes), "{yes:?}");
        }
        for no in [
            &["-q"][..],
            &["-S", "--no-server-response"],
            &["--server-response=off"],
            &["-O", "-S"],
            &["-nv"],
        ] {
            assert!(!shows(no), "{no:?}");
        }
    }

    #[test]
    fn what_widens_wgets_own_retries_is_named_as_given() {
        assert_eq!(
            retries_more(&wget(&[
                "--retry-connrefused",
                "--retry-on-http-error=503,429"
            ])),
            ["--retry-connrefused", "--retry-on-http-error=503,429"]
        );
        assert_eq!(
            retries_more(&wget(&["--retry-on-http-error", "503"])),
            ["--retry-on-http-error=503"]
        );
        assert!(retries_more(&wget(&["--retry-connrefused", "--no-retry-connrefused"])).is_empty());
        assert!(retries_more(&wget(&["-q"])).is_empty());
    }

    #[test]
    fn short_options_with_values_end_a_cluster() {
        assert_eq!(
            options(&wget(&["-nv", "-qO-", "-U", "-S", "http://h/"])),
            [
                Opt {
                    name: "no",
                    value: Some("v".into()),
                    on: true
                },
                Opt {
                    name: "quiet",
                    value: None,
                    on: true
                },
                Opt {
                    name: "output-document",
                    value: Some("-".into()),
                    on: true
                },
                Opt {
                    name: "user-agent",
                    value: Some("-S".into()),
                    on: true
                },
            ]
        );
    }
}
