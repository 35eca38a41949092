//! What curl's command line asks for, as the curl preset needs to know it:
//! the words after the program, read as curl reads them into (option,
//! value) pairs (`options`), and small questions over those pairs. Pure:
//! words in, answers out.
//!
//! curl's forms: long options (`--fail`, `--output FILE`: curl knows no
//! `--output=FILE`, and refuses it), `--no-` before a switch to turn it
//! off, `--expand-` before an option that takes a value, short options
//! alone or in a cluster (`-fsSL`), a short option's value attached
//! (`-XPOST`, `-sSofile`) or in the next word (`-o file`), and `--`, after
//! which every word is a URL. An option that takes a value takes the next
//! word whatever it looks like: in `-H -f`, `-f` is a header, not
//! `--fail`. Only the command line is read: not `~/.curlrc`, nor a file
//! of `-K`/`--config`.

use std::ffi::OsString;

use crate::argv::{self, Token};

/// One option of curl's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// The option's long name without its dashes, however it was given:
    /// `-f` and `--fail` are both `fail`, `--no-fail` is `fail` turned off.
    /// A short option curl does not know is named `-` and its letter.
    pub name: String,
    /// The value of an option that takes one; `None` for a switch, or for
    /// an option whose value is missing at the end of the line.
    pub value: Option<String>,
    /// Whether a switch is turned on: false for `--no-NAME` (and `-N`,
    /// which is `--no-buffer`).
    pub on: bool,
}

impl Opt {
    /// Whether this is the option `name`, turned on.
    fn is(&self, name: &str) -> bool {
        self.on && self.name == name
    }
}

/// curl's options, in the order given, from its command line (`args`, the
/// program first). Words that are not options (the URLs) are left out.
pub fn options(args: &[OsString]) -> Vec<Opt> {
    // `--retry=3` is an option curl does not know: it takes no word.
    let long_name = |long: &str| match long.strip_prefix("no-") {
        Some(rest) => (rest.to_owned(), false),
        None => (
            long.strip_prefix("expand-").unwrap_or(long).to_owned(),
            true,
        ),
    };
    let tokens = argv::tokens(
        args,
        |long| takes_value(&long_name(long).0),
        |letter| takes_value(&short_name(letter)),
    );
    tokens
        .into_iter()
        .map(|token| match token {
            Token::Long(long, value) => {
                let (name, on) = long_name(&long);
                Opt { name, value, on }
            }
            Token::Short(letter, value) => Opt {
                name: short_name(letter),
                value,
                on: letter != 'N',
            },
        })
        .collect()
}

/// The long name of a short option.
fn short_name(letter: char) -> String {
    match SHORT.binary_search_by_key(&letter, |&(c, _)| c) {
        Ok(i) => SHORT[i].1.to_owned(),
        Err(_) => format!("-{letter}"),
    }
}

/// Whether the long option `name` takes a value.
fn takes_value(name: &str) -> bool {
    TAKES_VALUE.binary_search(&name).is_ok()
}

/// Whether curl's arguments make a request that must not be repeated
/// blindly: a POST or PATCH (`-X`/`--request`, or implied by `-d`,
/// `--data*`, `--json`, `-F`, `--form*`, but not with `-G`/`--get`, which
/// puts the data in the URL of a GET), without an `Idempotency-Key` header
/// (`-H`/`--header`).
pub fn request_not_idempotent(args: &[OsString]) -> bool {
    let opts = options(args);
    let get = last_switch(&opts, &["get"]);
    let mut method: Option<String> = None;
    let mut sends = false;
    let mut keyed = false;
    for opt in opts {
        match opt.name.as_str() {
            "request" => method = opt.value.map(|m| m.to_ascii_uppercase()),
            "data" | "data-ascii" | "data-binary" | "data-raw" | "data-urlencode" | "json"
            | "form" | "form-string" => sends = true,
            "header" => {
                keyed |= opt.value.is_some_and(|h| {
                    h.split(':')
                        .next()
                        .is_some_and(|n| n.trim().eq_ignore_ascii_case("idempotency-key"))
                });
            }
            _ => {}
        }
    }
    let method = method.unwrap_or_else(|| if sends && !get { "POST" } else { "GET" }.to_owned());
    matches!(method.as_str(), "POST" | "PATCH") && !keyed
}

/// Whether curl fails on an HTTP error (`-f`, `--fail`, `--fail-with-body`),
/// so that an error can be retried: without it, curl exits 0. The last of
/// them counts (`--no-fail` turns `-f` off).
pub fn fails_on_http_errors(args: &[OsString]) -> bool {
    last_switch(&options(args), &["fail", "fail-with-body"])
}

/// Whether the last of the switches `names` in `opts` is turned on.
fn last_switch(opts: &[Opt], names: &[&str]) -> bool {
    opts.iter()
        .rev()
        .find(|o| names.contains(&o.name.as_str()))
        .is_some_and(|o| o.on)
}

/// Whether curl shows the response's headers where backoff reads them:
/// `-D`/`--dump-header`, `-i`/`--include`/`--show-headers`, or
/// `-v`/`--verbose` (which prints them on stderr).
pub fn shows_headers(args: &[OsString]) -> bool {
    let opts = options(args);
    opts.iter().any(|o| o.name == "dump-header")
        || last_switch(&opts, &["include", "show-headers"])
        || last_switch(&opts, &["verbose"])
}

/// Which of curl's streams carry the responses' heads, `[stdout, stderr]`,
/// when it shows them (`shows_headers`): `-i` puts them on stdout before
/// the body, `-v` on stderr, `-D` where its file is (`-` for stdout, `%`
/// for stderr, or a device of either). On a stream that carries none, even
/// a body line that looks like a status line is the body's.
pub fn header_streams(args: &[OsString]) -> [bool; 2] {
    let opts = options(args);
    let dump = opts
        .iter()
        .rev()
        .find(|o| o.name == "dump-header")
        .and_then(|o| o.value.as_deref());
    [
        matches!(
            dump,
            Some("-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1")
        ) || last_switch(&opts, &["include", "show-headers"]),
        matches!(
            dump,
            Some("%" | "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2")
        ) || last_switch(&opts, &["verbose"]),
    ]
}

/// Whether curl writes the body to its stdout: no `-o`/`--output` but one
/// of `-`, and no `-O`/`--remote-name`/`--remote-name-all`.
pub fn writes_body_to_stdout(args: &[OsString]) -> bool {
    !options(args).iter().any(|o| {
        o.is("remote-name")
            || o.is("remote-name-all")
            || (o.name == "output" && o.value.as_deref() != Some("-"))
    })
}

/// How many times curl retries a transfer by itself: the last `--retry N`
/// (0, its default, when none is given; `None` for a value curl refuses,
/// and then runs nothing).
pub fn retries(args: &[OsString]) -> Option<u64> {
    let opts = options(args);
    let Some(opt) = opts.iter().rev().find(|o| o.name == "retry") else {
        return Some(0);
    };
    let text = opt.value.as_deref()?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Past u64, still more retries than any run makes.
    Some(text.parse().unwrap_or(u64::MAX))
}

/// What widens the failures curl retries by itself with `--retry`:
/// `--retry-all-errors` and `--retry-connrefused`, turned on.
pub fn retries_more(args: &[OsString]) -> Vec<&'static str> {
    let opts = options(args);
    ["--retry-all-errors", "--retry-connrefused"]
        .into_iter()
        .filter(|flag| last_switch(&opts, &[&flag[2..]]))
        .collect()
}

/// Where curl's response headers go when backoff cannot read them there:
/// the file of the last `-D`/`--dump-header` when it is not one of curl's
/// streams, and nothing is printed that backoff reads either (`-i`, `-v`,
/// `-I`). `None` when curl shows them where backoff reads them, or
/// nowhere.
pub fn header_file(args: &[OsString]) -> Option<String> {
    if heads_seen(args) {
        return None;
    }
    options(args)
        .into_iter()
        .rev()
        .find(|o| o.name == "dump-header")
        .and_then(|o| o.value)
}

/// Whether curl prints the responses' heads where backoff reads them: on
/// stdout or stderr (`-i`, `-v`, `-D -`, `-D /dev/stderr`), or as the
/// output itself (`-I`, `--head`).
pub fn heads_seen(args: &[OsString]) -> bool {
    header_streams(args) != [false, false] || last_switch(&options(args), &["head"])
}

/// curl's long options that take a value, sorted (from curl's own table;
/// `--help` takes its topic only when attached, and is left out).
const TAKES_VALUE: [&str; 150] = [
    "abstract-unix-socket",
    "alt-svc",
    "aws-sigv4",
    "cacert",
    "capath",
    "cert",
    "cert-type",
    "ciphers",
    "config",
    "connect-timeout",
    "connect-to",
    "continue-at",
    "cookie",
    "cookie-jar",
    "create-file-mode",
    "crlfile",
    "curves",
    "data",
    "data-ascii",
    "data-binary",
    "data-raw",
    "data-urlencode",
    "delegation",
    "dns-interface",
    "dns-ipv4-addr",
    "dns-ipv6-addr",
    "dns-servers",
    "doh-url",
    "dump-header",
    "ech",
    "egd-file",
    "engine",
    "etag-compare",
    "etag-save",
    "expect100-timeout",
    "form",
    "form-string",
    "ftp-account",
    "ftp-alternative-to-user",
    "ftp-method",
    "ftp-port",
    "ftp-ssl-ccc-mode",
    "happy-eyeballs-timeout-ms",
    "haproxy-clientip",
    "header",
    "hostpubmd5",
    "hostpubsha256",
    "hsts",
    "httpsig-algo",
    "httpsig-headers",
    "httpsig-key",
    "httpsig-keyid",
    "interface",
    "ip-tos",
    "ipfs-gateway",
    "json",
    "keepalive-cnt",
    "keepalive-time",
    "key",
    "key-type",
    "knownhosts",
    "krb",
    "krb4",
    "libcurl",
    "limit-rate",
    "local-port",
    "login-options",
    "mail-auth",
    "mail-from",
    "mail-rcpt",
    "max-filesize",
    "max-redirs",
    "max-time",
    "netrc-file",
    "noproxy",
    "oauth2-bearer",
    "output",
    "output-dir",
    "parallel-max",
    "parallel-max-host",
    "pass",
    "pinnedpubkey",
    "preproxy",
    "proto",
    "proto-default",
    "proto-redir",
    "proxy",
    "proxy-cacert",
    "proxy-capath",
    "proxy-cert",
    "proxy-cert-type",
    "proxy-ciphers",
    "proxy-crlfile",
    "proxy-header",
    "proxy-key",
    "proxy-key-type",
    "proxy-pass",
    "proxy-pinnedpubkey",
    "proxy-service-name",
    "proxy-tls13-ciphers",
    "proxy-tlsauthtype",
    "proxy-tlspassword",
    "proxy-tlsuser",
    "proxy-user",
    "proxy1.0",
    "pubkey",
    "quote",
    "random-file",
    "range",
    "rate",
    "referer",
    "request",
    "request-target",
    "resolve",
    "retry",
    "retry-delay",
    "retry-max-time",
    "sasl-authzid",
    "service-name",
    "sigalgs",
    "socks4",
    "socks4a",
    "socks5",
    "socks5-gssapi-service",
    "socks5-hostname",
    "speed-limit",
    "speed-time",
    "ssl-sessions",
    "stderr",
    "telnet-option",
    "tftp-blksize",
    "time-cond",
    "tls-max",
    "tls13-ciphers",
    "tlsauthtype",
    "tlspassword",
    "tlsuser",
    "trace",
    "trace-ascii",
    "trace-config",
    "unix-socket",
    "upload-file",
    "upload-flags",
    "url",
    "url-query",
    "user",
    "user-agent",
    "variable",
    "vlan-priority",
    "write-out",
];
/// curl's short options and their long names, sorted.
const SHORT: [(char, &str); 59] = [
    ('#', "progress-bar"),
    ('0', "http1.0"),
    ('1', "tlsv1"),
    ('2', "sslv2"),
    ('3', "sslv3"),
    ('4', "ipv4"),
    ('6', "ipv6"),
    (':', "next"),
    ('A', "user-agent"),
    ('B', "use-ascii"),
    ('C', "continue-at"),
    ('D', "dump-header"),
    ('E', "cert"),
    ('F', "form"),
    ('G', "get"),
    ('H', "header"),
    ('I', "head"),
    ('J', "remote-header-name"),
    ('K', "config"),
    ('L', "location"),
    ('M', "manual"),
    ('N', "buffer"),
    ('O', "remote-name"),
    ('P', "ftp-port"),
    ('Q', "quote"),
    ('R', "remote-time"),
    ('S', "show-error"),
    ('T', "upload-file"),
    ('U', "proxy-user"),
    ('V', "version"),
    ('X', "request"),
    ('Y', "speed-limit"),
    ('Z', "parallel"),
    ('a', "append"),
    ('b', "cookie"),
    ('c', "cookie-jar"),
    ('d', "data"),
    ('e', "referer"),
    ('f', "fail"),
    ('g', "globoff"),
    ('h', "help"),
    ('i', "show-headers"),
    ('j', "junk-session-cookies"),
    ('k', "insecure"),
    ('l', "list-only"),
    ('m', "max-time"),
    ('n', "netrc"),
    ('o', "output"),
    ('p', "proxytunnel"),
    ('q', "disable"),
    ('r', "range"),
    ('s', "silent"),
    ('t', "telnet-option"),
    ('u', "user"),
    ('v', "verbose"),
    ('w', "write-out"),
    ('x', "proxy"),
    ('y', "speed-time"),
    ('z', "time-cond"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line `curl WORDS...`.
    fn curl(words: &[&str]) -> Vec<OsString> {
        std::iter::once("curl")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn curls_arguments_tell_a_request_not_to_repeat() {
        let unsafe_request = |words: &[&str]| request_not_idempotent(&curl(words));
        for post in [
            &["-fsS", "-d", "x=1", "http://h/"][..],
            &["-sSd", "x=1", "http://h/"],
            &["--data-binary", "@f", "http://h/"],
            &["--json", "{}", "http://h/"],
            &["-F", "f=@x", "http://h/"],
            &["-XPOST", "http://h/"],
            &["--request", "patch", "http://h/"],
            &["-X", "POST", "-H", "Accept: x", "http://h/"],
        ] {
            assert!(unsafe_request(post), "{post:?}");
        }
        for safe in [
            &["-fsS", "http://h/"][..],
            &["-d", "x", "-X", "PUT", "http://h/"],
            &["-d", "x", "-H", "Idempotency-Key: 42", "http://h/"],
            &[
                "--header",
                "idempotency-key: 7",
                "--json",
                "{}",
                "http://h/",
            ],
            &["-o", "out", "http://h/"],
        ] {
            assert!(!unsafe_request(safe), "{safe:?}");
        }
    }

    #[test]
    fn curl_fails_on_http_errors_with_f_in_any_usual_form() {
        let fails = |words: &[&str]| fails_on_http_errors(&curl(words));
        for yes in [
            &["-f"][..],
            &["-fsS"],
            &["-sSf"],
            &["-sSfL"],
            &["--fail"],
            &["--fail-with-body"],
        ] {
            assert!(fails(yes), "{yes:?}");
        }
        for no in [
            &["-sS"][..],
            &["-o", "file"],
            &["-ofile"],
            &["--fail-early"],
            &[],
        ] {
            assert!(!fails(no), "{no:?}");
        }
    }

    #[test]
    fn curl_shows_headers_with_d_i_or_v_in_any_usual_form() {
        let shows = |words: &[&str]| shows_headers(&curl(words));
        for yes in [
            &["-D", "/dev/stderr"][..],
            &["-Dh.txt"],
            &["--dump-header", "h"],
            &["-i"],
            &["-fsSi"],
            &["--include"],
            &["-v"],
            &["-sv"],
        ] {
            assert!(shows(yes), "{yes:?}");
        }
        for no in [&["-fsS"][..], &["-o", "file"], &[]] {
            assert!(!shows(no), "{no:?}");
        }
    }

    #[test]
    fn curls_heads_are_on_the_stream_that_its_flags_say() {
        let streams = |words: &[&str]| header_streams(&curl(words));
        assert_eq!(streams(&["-fsSi"]), [true, false]);
        assert_eq!(streams(&["--include"]), [true, false]);
        assert_eq!(streams(&["-sv"]), [false, true]);
        assert_eq!(streams(&["-D", "/dev/stderr"]), [false, true]);
        assert_eq!(streams(&["--dump-header", "%"]), [false, true]);
        assert_eq!(streams(&["--dump-header", "-"]), [true, false]);
        assert_eq!(streams(&["-D-", "-v"]), [true, true]);
        assert_eq!(streams(&["-D", "h.txt"]), [false, false]);
        // A -D file named like a flag is no flag.
        assert_eq!(streams(&["-D", "-v"]), [false, false]);
    }

    #[test]
    fn curls_body_goes_to_stdout_unless_an_output_file_is_given() {
        let to_stdout = |words: &[&str]| writes_body_to_stdout(&curl(words));
        assert!(to_stdout(&["-fsS", "http://h/"]));
        assert!(to_stdout(&["-o", "-", "http://h/"]));
        assert!(to_stdout(&["-D", "/dev/stderr", "http://h/"]));
        for file in [
            &["-o", "out", "http://h/"][..],
            &["-sSo", "out", "http://h/"],
            &["-oout", "http://h/"],
            &["-O", "http://h/x"],
            &["-sSO", "http://h/x"],
            &["--output", "out", "http://h/"],
            &["--remote-name-all", "http://h/x"],
        ] {
            assert!(!to_stdout(file), "{file:?}");
        }
    }

    /// An option of the tokenizer's output.
    fn opt(name: &str, value: Option<&str>, on: bool) -> Opt {
        Opt {
            name: name.to_owned(),
            value: value.map(str::to_owned),
            on,
        }
    }

    #[test]
    fn the_tables_are_sorted_for_their_binary_search() {
        assert!(TAKES_VALUE.windows(2).all(|w| w[0] < w[1]));
        assert!(SHORT.windows(2).all(|w| w[0].0 < w[1].0));
        for (_, long) in SHORT {
            assert!(!long.starts_with("no-"), "{long}");
        }
    }

    #[test]
    fn options_are_read_in_every_form_curl_accepts() {
        let on = |name| opt(name, None, true);
        let with = |name, value| opt(name, Some(value), true);
        // A cluster of switches, one with its value attached, a value in
        // the next word, the long forms with a space or `=`.
        assert_eq!(
            options(&curl(&[
                "-fsSL", "-XPOST", "-o", "out", "--header", "A: b", "--url", "u"
            ])),
            [
                on("fail"),
                on("silent"),
                on("show-error"),
                on("location"),
                with("request", "POST"),
                with("output", "out"),
                with("header", "A: b"),
                with("url", "u"),
            ]
        );
        // A value ends a cluster: the rest of it is the value.
        assert_eq!(
            options(&curl(&["-sSofile", "-sSd", "x=1"])),
            [
                on("silent"),
                on("show-error"),
                with("output", "file"),
                on("silent"),
                on("show-error"),
                with("data", "x=1"),
            ]
        );
        // `--no-` turns a switch off, and so does -N (--no-buffer);
        // `--expand-` names the option after it.
        assert_eq!(
            options(&curl(&[
                "--no-fail",
                "-N",
                "--buffer",
                "--expand-data",
                "{{v}}"
            ])),
            [
                opt("fail", None, false),
                opt("buffer", None, false),
                on("buffer"),
                with("data", "{{v}}"),
            ]
        );
        // A value is the next word whatever it looks like.
        assert_eq!(
            options(&curl(&["-H", "-f", "--user-agent", "--verbose", "-D", "-"])),
            [
                with("header", "-f"),
                with("user-agent", "--verbose"),
                with("dump-header", "-"),
            ]
        );
        // URLs and a lone `-` are no options; after `--` nothing is.
        assert_eq!(
            options(&curl(&["http://h/", "-", "-v", "--", "-f", "--fail"])),
            [on("verbose")]
        );
        // A letter curl does not know is a switch of its own; a value
        // missing at the end is none.
        assert_eq!(
            options(&curl(&["-W", "-o"])),
            [on("-W"), opt("output", None, true)]
        );
        assert_eq!(options(&curl(&[])), []);
    }

    #[test]
    fn a_value_that_looks_like_a_flag_is_no_flag() {
        assert!(!fails_on_http_errors(&curl(&["-H", "-f", "http://h/"])));
        assert!(!fails_on_http_errors(&curl(&["-A", "--fail", "http://h/"])));
        assert!(!shows_headers(&curl(&["-H", "-i", "http://h/"])));
        assert!(!shows_headers(&curl(&["-e", "-v", "http://h/"])));
        assert!(!request_not_idempotent(&curl(&["-A", "-d", "http://h/"])));
        assert!(writes_body_to_stdout(&curl(&["-u", "-O", "http://h/"])));
        // Nor is a URL after `--`.
        assert!(!fails_on_http_errors(&curl(&["--", "-f"])));
    }

    #[test]
    fn the_last_of_a_switch_and_its_no_form_counts() {
        assert!(!fails_on_http_errors(&curl(&["-f", "--no-fail"])));
        assert!(fails_on_http_errors(&curl(&["--no-fail", "-f"])));
        assert!(!shows_headers(&curl(&["-v", "--no-verbose"])));
        assert_eq!(
            header_streams(&curl(&["-i", "--no-include", "-v"])),
            [false, true]
        );
        assert!(writes_body_to_stdout(&curl(&[
            "--no-remote-name-all",
            "http://h/"
        ])));
    }

    #[test]
    fn data_sent_with_get_is_in_the_url_of_a_get() {
        let unsafe_request = |words: &[&str]| request_not_idempotent(&curl(words));
        assert!(!unsafe_request(&["-G", "-d", "q=1", "http://h/"]));
        assert!(!unsafe_request(&[
            "-sSG",
            "--data-urlencode",
            "q=a b",
            "http://h/"
        ]));
        assert!(!unsafe_request(&["--get", "--json", "{}", "http://h/"]));
        // Unless the method is named, or --get turned off again.
        assert!(unsafe_request(&[
            "-G",
            "-X",
            "POST",
            "-d",
            "q=1",
            "http://h/"
        ]));
        assert!(unsafe_request(&[
            "-G",
            "--no-get",
            "-d",
            "q=1",
            "http://h/"
        ]));
    }

    #[test]
    fn a_long_option_with_an_equals_sign_is_none_curl_knows() {
        // curl refuses `--retry=3`: it is no retry, and takes no word.
        assert_eq!(
            options(&curl(&["--retry=3", "http://h/"])),
            [opt("retry=3", None, true)]
        );
        assert_eq!(retries(&curl(&["--retry=3", "http://h/"])), Some(0));
        assert!(!fails_on_http_errors(&curl(&["--fail=yes"])));
    }

    #[test]
    fn curls_own_retries_are_the_last_retry_given() {
        let retries = |words: &[&str]| retries(&curl(words));
        assert_eq!(retries(&["-fsS", "http://h/"]), Some(0));
        assert_eq!(retries(&["--retry", "3", "http://h/"]), Some(3));
        assert_eq!(retries(&["--retry", "3", "--retry", "0"]), Some(0));
        assert_eq!(retries(&["http://h/", "--retry", "2"]), Some(2));
        assert_eq!(retries(&["--retry", "-1"]), None);
        assert_eq!(retries(&["--retry", "x"]), None);
        assert_eq!(retries(&["--retry"]), None);
        assert_eq!(retries(&["-H", "--retry", "5"]), Some(0));
        assert_eq!(retries(&["--", "--retry", "5"]), Some(0));
        assert_eq!(
            retries(&["--retry", "99999999999999999999999"]),
            Some(u64::MAX)
        );
        assert_eq!(
            retries_more(&curl(&[
                "--retry-connrefused",
                "--retry-all-errors",
                "--retry",
                "1"
            ])),
            ["--retry-all-errors", "--retry-connrefused"]
        );
        assert!(retries_more(&curl(&["--retry-all-errors", "--no-retry-all-errors"])).is_empty());
    }

    #[test]
    fn headers_dumped_to_a_file_are_unseen_and_the_file_is_named() {
        let file = |words: &[&str]| header_file(&curl(words));
        assert_eq!(file(&["-D", "h.txt"]), Some("h.txt".to_owned()));
        assert_eq!(file(&["-sSDh.txt"]), Some("h.txt".to_owned()));
        for seen in [
            &["-D", "/dev/stderr"][..],
            &["-D", "-"],
            &["-D", "h.txt", "-i"],
            &["-D", "h.txt", "-v"],
            &["-D", "h.txt", "-I"],
            &["-fsS"],
        ] {
            assert_eq!(file(seen), None, "{seen:?}");
        }
        assert!(heads_seen(&curl(&["-I"])));
        assert!(heads_seen(&curl(&["-sSi"])));
        assert!(!heads_seen(&curl(&["-fsS"])));
        // curl's trace prints headers behind offsets and hex: no header line.
        assert!(!heads_seen(&curl(&["--trace-ascii", "-"])));
    }

    #[test]
    fn every_switch_curl_knows_may_come_before_another_in_a_cluster() {
        // -Z (--parallel) and -k (--insecure) before -f, -j before -i.
        assert!(fails_on_http_errors(&curl(&["-Zkf"])));
        assert!(shows_headers(&curl(&["-ji"])));
        assert!(request_not_idempotent(&curl(&["-#d", "x", "http://h/"])));
    }
}
