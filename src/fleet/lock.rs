//! The rules of `--lock`: who holds a lock, as its holder records it for
//! the runs it keeps out (`backoff lock show`, the line of a run that finds
//! it held). Pure: the stores are in `budget`.
//!
//! A record is one line of at most `MAX_RECORD` bytes:
//!
//! ```text
//! backoff-lock v1 pid 4242 since 1764864000000 token 17 run 6f1c…-… host web-3
//! ```
//!
//! `token` is `-` where the store gives none (a file). A record read back
//! may have been written by anyone who could write the store: every field
//! is checked, a host name keeps only the characters host names have, and
//! a record out of shape is no record.

/// The longest record read or written.
pub const MAX_RECORD: usize = 512;

/// The longest host name kept (DNS's limit).
const MAX_HOST: usize = 253;

/// A run holding a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its process id, on its host.
    pub pid: u32,
    /// Since when it holds the lock, in Unix milliseconds.
    pub since_ms: u64,
    /// The fencing token its acquisition took, where the store gives one.
    pub token: Option<u64>,
    /// Its run id (`BACKOFF_RUN_ID`).
    pub run_id: String,
    /// Its host name.
    pub host: String,
}

impl Holder {
    /// This record's line, newline included.
    pub fn record(&self) -> String {
        let token = self.token.map_or_else(|| "-".to_owned(), |t| t.to_string());
        let line = format!(
            "backoff-lock v1 pid {} since {} token {token} run {} host {}\n",
            self.pid,
            self.since_ms,
            clean(&self.run_id, 64),
            clean(&self.host, MAX_HOST)
        );
        line
    }

    /// The holder a record names; `None` when `text` is not a record.
    pub fn parse(text: &[u8]) -> Option<Holder> {
        if text.len() > MAX_RECORD {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        let line = text.strip_suffix('\n').unwrap_or(text);
        let words: Vec<&str> = line.split(' ').collect();
        let [
            "backoff-lock",
            "v1",
            "pid",
            pid,
            "since",
            since,
            "token",
            token,
            "run",
            run_id,
            "host",
            host,
        ] = words[..]
        else {
            return None;
        };
        let token = match token {
            "-" => None,
            t => Some(number(t)?),
        };
        if clean(run_id, 64) != run_id || clean(host, MAX_HOST) != host || host.is_empty() {
            return None;
        }
        Some(Holder {
            pid: u32::try_from(number(pid)?).ok()?,
            since_ms: number(since)?,
            token,
            run_id: run_id.to_owned(),
            host: host.to_owned(),
        })
    }
}

/// A lock as `backoff lock show` and `reset` find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    /// Whether a run holds it.
    pub held: bool,
    /// The record of its holder, or of its last holder when it is free
    /// and the record was left (a holder killed).
    pub holder: Option<Holder>,
}

/// A decimal number of at most 19 digits, without sign or spaces.
fn number(word: &str) -> Option<u64> {
    if word.is_empty() || word.len() > 19 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// `s` with only the characters of host names and UUIDs (letters, digits,
/// `.`, `-`, `_`), any other replaced by `?`, at most `max` of them; `?`
/// for nothing at all.
fn clean(s: &str, max: usize) -> String {
    let kept: String = s
        .chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '?'
            }
        })
        .collect();
    if kept.is_empty() {
        "?".to_owned()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder() -> Holder {
        Holder {
            pid: 4242,
            since_ms: 1_764_864_000_000,
            token: Some(17),
            run_id: "6f1c2b9e-0d3a-4c1e-9b7a-1f2e3d4c5b6a".to_owned(),
            host: "web-3.example".to_owned(),
        }
    }

    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let h = holder();
        assert_eq!(
            h.record(),
            "backoff-lock v1 pid 4242 since 1764864000000 token 17 run 6f1c2b9e-0d3a-4c1e-9b7a-1f2e3d4c5b6a host web-3.example\n"
        );
        assert_eq!(Holder::parse(h.record().as_bytes()), Some(h.clone()));
        let file = Holder { token: None, ..h };
        assert!(file.record().contains(" token - "));
        assert_eq!(Holder::parse(file.record().as_bytes()), Some(file));
    }

    #[test]
    fn a_host_name_keeps_only_what_host_names_hold() {
        let h = Holder {
            host: "evil\u{1b}[2J host\nname".to_owned(),
            ..holder()
        };
        let record = h.record();
        assert!(record.ends_with(" host evil??2J?host?name\n"), "{record}");
        assert_eq!(
            Holder::parse(record.as_bytes()).unwrap().host,
            "evil??2J?host?name"
        );
        let empty = Holder {
            host: String::new(),
            ..holder()
        };
        assert!(Holder::parse(empty.record().as_bytes()).is_some());
    }

    #[test]
    fn what_is_not_a_record_is_none() {
        let good = holder().record();
        for bad in [
            String::new(),
            "backoff-lock v2 pid 1 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid -1 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid 99999999999 since 1 token - run r host h\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host h extra\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host h\u{1b}\n".to_owned(),
            "backoff-lock v1 pid 1 since 1 token - run r host \n".to_owned(),
            "backoff-lock v1 pid 1 since 99999999999999999999 token - run r host h\n".to_owned(),
            good.replace("token 17", "token x"),
            format!("{good}{}", "x".repeat(MAX_RECORD)),
        ] {
            assert_eq!(Holder::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(Holder::parse(&[0xff, 0xfe]), None);
    }
}
