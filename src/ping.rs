//! Check-ins (`--ping`): a receiver of the run's events that tells a
//! monitor (healthchecks.io and the services that speak its protocol, or
//! any URL) that the job started and how it ended, so that a job that
//! fails, or never runs, is noticed. It never changes the run's exit
//! status and never delays it by more than `--ping-timeout` in all.
//!
//! With `--ping URL`: `URL/start` when the run starts (a GET, sent in the
//! background, so the job does not wait for it), then when it ends `URL`
//! on success, else `URL/N` with backoff's exit status (a POST whose body
//! is a summary line and the end of the final attempt's output, all of it
//! within `--ping-body-limit`, or the monitor's smaller `Ping-Body-Limit`:
//! a self-hosted Healthchecks keeps the *first* bytes of a body, so the
//! output is cut at its front, and said), each with `?rid=RUN_ID`.
//! `--ping-start`, `--ping-success` and `--ping-fail` name other URLs, used
//! as given. A run that never starts
//! the command because another run holds its lock, or a circuit is open,
//! checks in nothing; one that does not run it because its lock could not
//! be had for certain (`lock_unavailable`) sends the end check-in of that
//! failure, with no start, and a run that ran without its lock
//! (`--lock-fail open`) says so in its end check-in's body. A URL is a
//! credential: what backoff says of it names only its host. A failure
//! tolerated under `--alert-after` ends with a log entry, `URL/log`, which
//! the monitor records without alerting (none with `--ping-fail` alone,
//! which alerts), and its body says so.

use std::time::{Duration, Instant};

use crate::event::{AlertNews, Event, LockNews, Report};
use crate::exit::Exit;
use crate::http::{Cancel, Client, Method, Request, Target};
use crate::output::Marker;
use crate::report::Warnings;

/// Where the check-ins go.
#[derive(Debug, Clone, Default)]
pub struct Urls {
    /// `--ping`.
    pub base: Option<Target>,
    /// `--ping-start`.
    pub start: Option<Target>,
    /// `--ping-success`.
    pub success: Option<Target>,
    /// `--ping-fail`.
    pub fail: Option<Target>,
}

impl Urls {
    /// Whether any check-in is asked for.
    pub fn any(&self) -> bool {
        self.base.is_some() || self.start.is_some() || self.success.is_some() || self.fail.is_some()
    }

    /// The URL of the start check-in, if one is sent.
    fn start(&self, run_id: &str) -> Option<Target> {
        self.start.clone().or_else(|| {
            self.base
                .as_ref()
                .map(|b| b.join("start").with_query("rid", run_id))
        })
    }

    /// The URL of the end check-in of a failure tolerated under
    /// `--alert-after`: a log entry (`URL/log`), which records the run and
    /// alerts no one; none without `--ping` (`--ping-fail` alerts).
    fn log(&self, run_id: &str) -> Option<Target> {
        self.base
            .as_ref()
            .map(|b| b.join("log").with_query("rid", run_id))
    }

    /// The URL of the end check-in of a run that ended with `exit`.
    fn end(&self, exit: Exit, run_id: &str) -> Option<Target> {
        let given = if exit == Exit::SUCCESS {
            &self.success
        } else {
            &self.fail
        };
        given.clone().or_else(|| {
            self.base.as_ref().map(|b| {
                // The protocol takes exit statuses 1 to 255 in the path;
                // a larger one (a Windows NTSTATUS) is told as a failure.
                let b = if exit == Exit::SUCCESS {
                    b.clone()
                } else if let Ok(code @ 1..=255) = u8::try_from(exit.shell_code()) {
                    b.join(&code.to_string())
                } else {
                    b.join("fail")
                };
                b.with_query("rid", run_id)
            })
        })
    }
}

/// Statuses a check-in is tried again after: the server's own trouble, or
/// its asking to slow down.
pub(crate) fn retryable(status: u16) -> bool {
    status == 429 || status >= 500
}

/// Whether a check-in got an answer that counts: a 2xx (a redirect is
/// followed first).
pub(crate) fn accepted(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Sends one check-in, retried within `deadline` until `cancel` ends it:
/// the `Ping-Body-Limit` of its answer, if it has a valid one, or what went
/// wrong, in a line naming only the host.
fn check_in(
    client: &Client,
    method: Method,
    target: &Target,
    body: &[u8],
    deadline: Instant,
    cancel: &Cancel,
) -> Result<Option<usize>, String> {
    let headers = [(
        "Content-Type".to_owned(),
        "text/plain; charset=utf-8".to_owned(),
    )];
    let req = Request {
        method,
        target,
        headers: &headers,
        body,
    };
    match client.send_with_retries(&req, deadline, retryable, cancel) {
        Ok(r) if accepted(r.status) => Ok(r.ping_body_limit.as_deref().and_then(monitor_limit)),
        Ok(r) => Err(format!("{}: answered {}", target.host(), r.status)),
        Err(f) => Err(f.to_string()),
    }
}

/// A monitor's `Ping-Body-Limit`: a whole number of bytes, in digits;
/// anything else (a sign, a unit, a number too large to be meant) is not
/// one.
fn monitor_limit(value: &str) -> Option<usize> {
    let digits = value.trim();
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The end check-in's body: `head` (the summary line and backoff's own
/// lines), then as much of the end of `tail` (the output, after
/// `forgotten` bytes no longer kept) as fits in `limit` bytes in all,
/// behind a line that says what was cut and why (`source`). The output is
/// cut at its front, on a UTF-8 boundary, for a monitor keeps the first
/// bytes of a body; when not even that line fits, `head` goes alone.
fn end_body(head: &[u8], tail: &[u8], forgotten: u64, limit: usize, source: &str) -> Vec<u8> {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let mut body = head.to_vec();
    if forgotten == 0 && head.len() + tail.len() <= limit {
        body.extend_from_slice(tail);
        return body;
    }
    let notice = |cut: u64| {
        format!(
            "backoff: {cut} byte{} of output cut here: the check-in carries at most {limit} bytes ({source})\n",
            if cut == 1 { "" } else { "s" }
        )
    };
    // The longest the notice can be: with all of the output cut.
    let most = forgotten.saturating_add(count(tail.len()));
    let room = limit.saturating_sub(head.len() + notice(most).len());
    if room == 0 || tail.is_empty() {
        return body;
    }
    let first = tail.len().saturating_sub(room);
    let mut from = first;
    // Not inside a character: at most 3 bytes more go.
    while from < tail.len().min(first + 3) && (tail[from] & 0xC0) == 0x80 {
        from += 1;
    }
    body.extend(notice(forgotten.saturating_add(count(from))).into_bytes());
    body.extend_from_slice(&tail[from..]);
    body
}

/// The check-ins of one run: a receiver of its events.
pub struct Pings {
    urls: Urls,
    client: Option<Client>,
    timeout: Duration,
    /// `--ping-body-limit`.
    body_limit: usize,
    run_id: String,
    /// Marks where each attempt's output starts, when the output passes
    /// through backoff.
    marker: Option<Marker>,
    /// The start check-in, on its way: the monitor's `Ping-Body-Limit`,
    /// or why it failed.
    started: Option<std::thread::JoinHandle<Result<Option<usize>, String>>>,
    /// Whether the run started the command's part (the `start` event).
    began: bool,
    /// Whether the run ended before it because its lock could not be had
    /// for certain: a failure the monitor must hear of.
    unrun: bool,
    /// What the body says besides the summary line, and the words that
    /// tell it is in the output already: a lock that could not be had.
    said: Vec<(String, String)>,
    /// When backoff must have exited (`--max-time` plus `--kill-after`),
    /// which ends the check-ins too.
    by: Option<Instant>,
    /// What the run's end did to the count of its job's failed runs in a
    /// row (`--alert-after`), and N: a failure tolerated is a log entry.
    alert: Option<(u64, AlertNews)>,
    warnings: Warnings,
}

impl Pings {
    /// The check-ins to `urls` of the run `run_id`, each within `timeout`
    /// in all, the end one's body within `body_limit` bytes; `marker`
    /// gives the final attempt's output, when it passes through backoff.
    pub fn new(
        urls: Urls,
        timeout: Duration,
        body_limit: usize,
        run_id: &str,
        marker: Option<Marker>,
        warnings: Warnings,
        by: Option<Instant>,
    ) -> Pings {
        let client = match Client::new(None) {
            Ok(c) => Some(c),
            Err(why) => {
                warnings.warn(&format!("no check-in will be sent: {why}"));
                None
            }
        };
        Pings {
            urls,
            client,
            timeout,
            body_limit,
            run_id: run_id.to_owned(),
            marker,
            started: None,
            began: false,
            unrun: false,
            said: Vec::new(),
            by,
            alert: None,
            warnings,
        }
    }

    /// Sends the start check-in in the background.
    fn start(&mut self) {
        self.began = true;
        let (Some(target), Some(client)) = (self.urls.start(&self.run_id), self.client.clone())
        else {
            return;
        };
        let timeout = Instant::now() + self.timeout;
        let deadline = self.by.map_or(timeout, |by| by.min(timeout));
        let spawned = std::thread::Builder::new()
            .name("check-in".into())
            .spawn(move || {
                check_in(
                    &client,
                    Method::Get,
                    &target,
                    &[],
                    deadline,
                    &Cancel::default(),
                )
            });
        match spawned {
            Ok(handle) => self.started = Some(handle),
            Err(e) => self
                .warnings
                .warn(&format!("the start check-in was not sent: {e}")),
        }
    }

    /// Sends the end check-in of a run that ended with `exit`, after
    /// `attempts` attempts for `reason`: the start check-in is waited for
    /// first (the monitor must see it first), and both together take at
    /// most `--ping-timeout` from now, and end by `by` (when backoff must
    /// have exited) if that comes first. `cancel` gives the end check-in
    /// up at its next pause (a terminating signal came): then nothing is
    /// said here, the caller says it.
    pub fn finish(
        &mut self,
        exit: Exit,
        attempts: u64,
        reason: &str,
        by: Option<Instant>,
        cancel: &Cancel,
    ) {
        if !self.began && !self.unrun {
            return;
        }
        let timeout = Instant::now() + self.timeout;
        let deadline = by.map_or(timeout, |by| by.min(timeout));
        let (start, monitor_limit) = match self.started.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Err(why))) => (Some(why), None),
            Some(Ok(Ok(limit))) => (None, limit),
            _ => (None, None),
        };
        let end = self.end(exit, attempts, reason, monitor_limit, deadline, cancel);
        if cancel.cancelled() {
            return;
        }
        match (start, end) {
            (Some(a), Some(b)) if a == b => self
                .warnings
                .warn(&format!("the start and end check-ins failed: {a}")),
            (start, end) => {
                for (which, why) in [("start", start), ("end", end)] {
                    if let Some(why) = why {
                        self.warnings
                            .warn(&format!("the {which} check-in failed: {why}"));
                    }
                }
            }
        }
    }

    /// Sends the end check-in by `deadline`, its body within the monitor's
    /// `monitor_limit` when it is below `--ping-body-limit`; why it failed,
    /// if it did.
    fn end(
        &self,
        exit: Exit,
        attempts: u64,
        reason: &str,
        monitor_limit: Option<usize>,
        deadline: Instant,
        cancel: &Cancel,
    ) -> Option<String> {
        let tolerated = self.alert.and_then(|(n, news)| news.tolerated(n));
        // A run that --lock-replace ended did not fail: the run that took
        // its place checks in for the job. Its end is a log entry too.
        let replaced = reason == "replaced";
        let target = if tolerated.is_some() || replaced {
            self.urls.log(&self.run_id)?
        } else {
            self.urls.end(exit, &self.run_id)?
        };
        let client = self.client.as_ref()?;
        let mut body = format!(
            "backoff: {} attempt{}, reason {reason}, exit status {}\n",
            attempts,
            if attempts == 1 { "" } else { "s" },
            exit.shell_code()
        )
        .into_bytes();
        if let Some((n, news @ AlertNews::Failed { failures })) = self.alert {
            let words = crate::report::text::alert_words(n, news);
            let line = if tolerated.is_some() {
                format!(
                    "backoff: {words}: a failed run, logged without an alert (--alert-after {n})\n"
                )
            } else {
                format!(
                    "backoff: {words}: {failures} runs in a row have failed (--alert-after {n})\n"
                )
            };
            body.extend(line.into_bytes());
        }
        if replaced {
            body.extend(
                b"backoff: replaced: a run of --lock-replace took the lock over; logged without an alert\n",
            );
        }
        let (tail, forgotten) = self.marker.as_ref().map(Marker::tail).unwrap_or_default();
        // A line the end of the output already holds (said there, before
        // any attempt) is not said twice.
        for (line, why) in &self.said {
            if !tail.windows(why.len()).any(|w| w == why.as_bytes()) {
                body.extend(format!("backoff: {line}\n").into_bytes());
            }
        }
        let (limit, source) = match monitor_limit {
            Some(limit) if limit < self.body_limit => (limit, "the monitor's Ping-Body-Limit"),
            _ => (self.body_limit, "--ping-body-limit"),
        };
        let body = end_body(&body, &tail, forgotten, limit, source);
        check_in(client, Method::Post, &target, &body, deadline, cancel).err()
    }
}

impl Report for Pings {
    fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::Start { .. } => self.start(),
            Event::AttemptStarted { .. } => {
                if let Some(marker) = &self.marker {
                    marker.mark();
                }
            }
            Event::Lock {
                key,
                news: LockNews::Unavailable { run, why },
            } => {
                self.unrun = !run;
                let line = if *run {
                    format!(
                        "lock '{key}' unavailable ({why}); the command ran WITHOUT the lock (--lock-fail open)"
                    )
                } else {
                    format!("lock '{key}' unavailable ({why}); the command was not run")
                };
                self.said.push((line, why.clone()));
            }
            Event::Alert {
                alert_after, news, ..
            } => self.alert = Some((*alert_after, *news)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] = b"backoff: 1 attempt, reason exhausted, exit status 1\n";

    #[test]
    fn a_body_that_fits_is_sent_whole_and_one_too_long_loses_the_front_of_the_output() {
        let tail = b"line 1\nline 2\n";
        let whole = end_body(HEAD, tail, 0, 10_000, "--ping-body-limit");
        assert_eq!(whole, [HEAD, tail].concat());
        let tail: Vec<u8> = (0..2000)
            .flat_map(|n| format!("line {n}\n").into_bytes())
            .collect();
        let cut = end_body(HEAD, &tail, 0, 10_000, "--ping-body-limit");
        assert!(cut.len() <= 10_000 && cut.len() > 9_900, "{}", cut.len());
        let text = String::from_utf8(cut).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap().as_bytes(), HEAD.trim_ascii_end());
        let notice = lines.next().unwrap();
        let kept = text.len() - HEAD.len() - notice.len() - 1;
        assert_eq!(
            notice,
            format!(
                "backoff: {} bytes of output cut here: the check-in carries at most 10000 bytes (--ping-body-limit)",
                tail.len() - kept
            )
        );
        assert!(text.ends_with("line 1999\n"));
        // Bytes no longer kept before the tail count as cut too.
        let cut = end_body(HEAD, b"end\n", 70_000, 200, "the monitor's Ping-Body-Limit");
        let text = String::from_utf8(cut).unwrap();
        assert!(
            text.contains("backoff: 70000 bytes of output cut here: the check-in carries at most 200 bytes (the monitor's Ping-Body-Limit)\nend\n"),
            "{text}"
        );
    }

    #[test]
    fn a_body_is_cut_between_characters_and_too_small_a_limit_sends_the_summary_alone() {
        let tail = "é".repeat(10_000).into_bytes();
        for limit in 300..304 {
            let cut = end_body(HEAD, &tail, 0, limit, "--ping-body-limit");
            assert!(cut.len() <= limit);
            String::from_utf8(cut).unwrap();
        }
        for limit in [0, 1, HEAD.len(), HEAD.len() + 60] {
            assert_eq!(end_body(HEAD, &tail, 0, limit, "--ping-body-limit"), HEAD);
        }
        assert_eq!(end_body(HEAD, b"", 0, 0, "--ping-body-limit"), HEAD);
    }

    #[test]
    fn a_monitors_limit_is_a_plain_number_of_bytes() {
        assert_eq!(monitor_limit("5000"), Some(5000));
        assert_eq!(monitor_limit(" 100000 "), Some(100_000));
        assert_eq!(monitor_limit("0"), Some(0));
        for nonsense in ["", "-1", "5k", "1e4", "10 000", "9999999999999", "+5"] {
            assert_eq!(monitor_limit(nonsense), None, "{nonsense}");
        }
    }

    #[test]
    fn the_urls_follow_the_healthchecks_protocol_and_given_ones_win() {
        let urls = Urls {
            base: Some(Target::parse("https://hc-ping.com/uuid").unwrap()),
            ..Urls::default()
        };
        assert!(urls.any());
        let start = urls.start("r1").unwrap();
        let end_ok = urls.end(Exit::SUCCESS, "r1").unwrap();
        let end_22 = urls.end(Exit::Code(22), "r1").unwrap();
        let end_sig = urls.end(Exit::Signal(crate::signal::TERM), "r1").unwrap();
        let end_ntstatus = urls.end(Exit::Code(0xC000_0005), "r1").unwrap();
        // 143 on Unix; on Windows an interrupted run's status is an
        // NTSTATUS, which the path cannot carry.
        let sig = match u8::try_from(Exit::Signal(crate::signal::TERM).shell_code()) {
            Ok(code) => format!("https://hc-ping.com/uuid/{code}?rid=r1"),
            Err(_) => "https://hc-ping.com/uuid/fail?rid=r1".to_owned(),
        };
        for (t, want) in [
            (start, "https://hc-ping.com/uuid/start?rid=r1"),
            (end_ok, "https://hc-ping.com/uuid?rid=r1"),
            (end_22, "https://hc-ping.com/uuid/22?rid=r1"),
            (end_sig, sig.as_str()),
            (end_ntstatus, "https://hc-ping.com/uuid/fail?rid=r1"),
        ] {
            assert_eq!(t.url(), want);
        }
        let given = Urls {
            fail: Some(Target::parse("https://cronitor.link/p/k/job?state=fail").unwrap()),
            ..urls
        };
        assert_eq!(
            given.end(Exit::Code(1), "r1").unwrap().url(),
            "https://cronitor.link/p/k/job?state=fail"
        );
        assert!(!Urls::default().any());
    }
}
