//! The secrets of a store URL, and keeping them out of every line backoff
//! writes. A URL is redacted without being parsed as a URL first: a URL that
//! does not parse (a `/` left unencoded in a password) still has its secret
//! hidden, and a doubt hides more, never less.

/// The names of query parameters that hold a password
/// (`redis+unix:///run/redis.sock?pass=...`).
const SECRET_PARAMETERS: [&str; 2] = ["pass", "password"];

/// The URL with its password and its password parameters shown as `***`:
/// `redis://user:***@host/0`, `redis+unix:///s.sock?pass=***`. The user
/// info ends at the last `@`, so a `/` or `@` in a password hides with it.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_query(url);
    };
    let rest = match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{}", redact_query(host)),
            None => format!("{userinfo}@{}", redact_query(host)),
        },
        None => redact_query(rest),
    };
    format!("{scheme}://{rest}")
}

/// `text` with every form of every secret of `url` (as written, and
/// percent-decoded) shown as `***`.
pub fn scrub(text: &str, url: &str) -> String {
    let mut forms: Vec<String> = secrets(url)
        .into_iter()
        .flat_map(|s| [decode(s), decode(&s.replace('+', " ")), s.to_owned()])
        .filter(|s| !s.is_empty())
        .collect();
    // The longest first, so that no part of a secret is left beside a `***`.
    forms.sort_by_key(|s| std::cmp::Reverse(s.len()));
    forms.iter().fold(text.to_owned(), |t, secret| {
        t.replace(secret.as_str(), "***")
    })
}

/// The secrets of a URL as written in it: the password of its user info and
/// the values of its password parameters.
fn secrets(url: &str) -> Vec<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let password = rest
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password);
    password.into_iter().chain(parameters(url)).collect()
}

/// The values of the password parameters of a URL's query.
fn parameters(url: &str) -> impl Iterator<Item = &str> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    query.split('&').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        SECRET_PARAMETERS
            .iter()
            .any(|p| name.eq_ignore_ascii_case(p))
            .then_some(value)
    })
}

/// `text` with the values of password parameters shown as `***`.
fn redact_query(text: &str) -> String {
    let Some((before, query)) = text.split_once('?') else {
        return text.to_owned();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _))
                if SECRET_PARAMETERS
                    .iter()
                    .any(|p| name.eq_ignore_ascii_case(p)) =>
            {
                format!("{name}=***")
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{before}?{}", pairs.join("&"))
}

/// Percent-decodes `text`; a `%` not followed by two hex digits stays.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let url = "redis://fleet:s3cr%40t@cache.example.test:6380/2";
        assert_eq!(redact(url), "redis://fleet:***@cache.example.test:6380/2");
        assert_eq!(redact("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact("redis://h:6379"), "redis://h:6379");
        assert_eq!(redact("redis://user@h/0"), "redis://user@h/0");
        assert_eq!(scrub("auth s3cr%40t failed", url), "auth *** failed");
        assert_eq!(scrub("auth s3cr@t failed", url), "auth *** failed");
    }

    #[test]
    fn a_slash_or_an_at_in_a_password_hides_with_it() {
        let url = "redis://:top/secret@host/0";
        assert_eq!(redact(url), "redis://:***@host/0");
        assert_eq!(scrub(&format!("bad {url}"), url), "bad redis://:***@host/0");
        let url = "redis://u:a@b/c@host:1/0";
        assert_eq!(redact(url), "redis://u:***@host:1/0");
        assert_eq!(scrub("x a@b/c y", url), "x *** y");
    }

    #[test]
    fn password_parameters_never_show() {
        let url = "redis+unix:///run/r.sock?db=1&pass=hun%2Fter&user=u";
        assert_eq!(redact(url), "redis+unix:///run/r.sock?db=1&pass=***&user=u");
        assert_eq!(scrub("hun/ter and hun%2Fter", url), "*** and ***");
        assert_eq!(
            redact("unix:///s?PASSWORD=x#f"),
            "unix:///s?PASSWORD=***",
            "a fragment after a password is hidden with it"
        );
        assert_eq!(redact("no url ?pass=x"), "no url ?pass=***");
    }
}
