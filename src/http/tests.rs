//! The client against real local servers: a thread that answers each
//! connection with the next canned answer, and tells what it was sent.

use super::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;

/// A server on 127.0.0.1 that answers connections in turn with `answers`
/// (`None`: accept and never answer); the requests it read come out of the
/// receiver.
fn serve(answers: Vec<Option<String>>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for answer in answers {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let request = read_request(&mut stream);
            let _ = tx.send(request);
            match answer {
                Some(a) => {
                    let _ = stream.write_all(a.as_bytes());
                }
                None => held.push(stream),
            }
        }
        // Those never answered stay open until the test ends.
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    (base, rx)
}

/// A request's head and body, as far as Content-Length says.
fn read_request(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|n| n.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return text;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&data).into_owned(),
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}

/// An HTTP/1.1 response with `headers` and `body`.
fn answer(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
}

fn client() -> Client {
    Client::new(None).unwrap()
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[test]
fn a_target_is_http_or_https_and_shows_only_its_host() {
    let t = Target::parse("https://hc-ping.com/0f3c1a2b-uuid?token=secret").unwrap();
    assert_eq!(t.host(), "hc-ping.com");
    assert!(!format!("{t:?}").contains("uuid"));
    assert_eq!(
        t.join("start").with_query("rid", "a b").url(),
        "https://hc-ping.com/0f3c1a2b-uuid/start?token=secret&rid=a%20b"
    );
    let plain = Target::parse("http://user:pw@127.0.0.1:8000/ping/").unwrap();
    assert_eq!(plain.host(), "127.0.0.1:8000");
    assert!(plain.cleartext_credentials());
    assert_eq!(
        plain.join("3").url(),
        "http://user:pw@127.0.0.1:8000/ping/3"
    );
    assert!(
        !Target::parse("https://u:p@h/")
            .unwrap()
            .cleartext_credentials()
    );
    for (bad, why) in [
        ("ftp://host/x", "'ftp://' is not http:// or https://"),
        ("hc-ping.com/uuid", "expected an http:// or https:// URL"),
        ("https://", "not a URL"),
        ("https://host/a b", "no spaces"),
        ("https://host/\u{1b}", "no spaces or control characters"),
    ] {
        let e = Target::parse(bad).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
        assert!(!e.contains("/x") && !e.contains("uuid"), "{e}");
    }
}

#[test]
fn a_get_and_a_post_reach_the_server_as_asked() {
    let (base, requests) = serve(vec![
        Some(answer("200 OK", "", "OK")),
        Some(answer("200 OK", "", "OK")),
    ]);
    let target = Target::parse(&format!("{base}/uuid")).unwrap();
    let start = target.join("start").with_query("rid", "r-1");
    let r = client()
        .send(
            &Request {
                method: Method::Get,
                target: &start,
                headers: &[],
                body: &[],
            },
            soon(),
        )
        .unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"OK"[..]));
    let got = requests.recv().unwrap();
    assert!(
        got.starts_with("GET /uuid/start?rid=r-1 HTTP/1.1\r\n"),
        "{got}"
    );
    assert!(
        got.to_ascii_lowercase().contains("user-agent: backoff/"),
        "{got}"
    );
    client()
        .send(
            &Request {
                method: Method::Post,
                target: &target.join("3"),
                headers: &[("Content-Type".into(), "text/plain".into())],
                body: b"the tail",
            },
            soon(),
        )
        .unwrap();
    let got = requests.recv().unwrap();
    assert!(got.starts_with("POST /uuid/3 HTTP/1.1\r\n"), "{got}");
    assert!(got.ends_with("\r\n\r\nthe tail"), "{got}");
}

#[test]
fn a_server_error_is_tried_again_and_a_client_error_is_not() {
    let (base, requests) = serve(vec![
        Some(answer("500 Internal Server Error", "", "")),
        Some(answer("429 Too Many Requests", "Retry-After: 0\r\n", "")),
        Some(answer("200 OK", "", "")),
        Some(answer("404 Not Found", "", "")),
    ]);
    let target = Target::parse(&base).unwrap();
    let req = Request {
        method: Method::Get,
        target: &target,
        headers: &[],
        body: &[],
    };
    let retryable = |s: u16| s == 429 || s >= 500;
    let r = client()
        .send_with_retries(&req, soon(), retryable, &Cancel::default())
        .unwrap();
    assert_eq!(r.status, 200);
    let r = client()
        .send_with_retries(&req, soon(), retryable, &Cancel::default())
        .unwrap();
    assert_eq!(r.status, 404);
    assert_eq!(requests.try_iter().count(), 4);
}

#[test]
fn a_server_that_never_answers_costs_the_deadline_and_no_more() {
    let (base, _requests) = serve(vec![None, None, None]);
    let target = Target::parse(&format!("{base}/secret-uuid?key=token")).unwrap();
    let req = Request {
        method: Method::Get,
        target: &target,
        headers: &[],
        body: &[],
    };
    let started = Instant::now();
    let e = client()
        .send_with_retries(
            &req,
            started + Duration::from_millis(700),
            |_| true,
            &Cancel::default(),
        )
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let line = e.to_string();
    assert!(line.contains("timed out"), "{line}");
    assert!(
        !line.contains("secret") && !line.contains("token"),
        "{line}"
    );
    assert!(line.starts_with("127.0.0.1:"), "{line}");
}

#[test]
fn endless_redirects_and_refused_connections_are_one_line_each() {
    let (base, _requests) = serve(
        (0..10)
            .map(|_| Some(answer("302 Found", "Location: /again\r\n", "")))
            .collect(),
    );
    let target = Target::parse(&format!("{base}/secret")).unwrap();
    let req = Request {
        method: Method::Get,
        target: &target,
        headers: &[],
        body: &[],
    };
    let e = client().send(&req, soon()).unwrap_err();
    assert!(e.to_string().ends_with("more than 5 redirects"), "{e}");
    // Nothing listens on the port any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = Target::parse(&format!("http://127.0.0.1:{port}/secret")).unwrap();
    let e = client()
        .send(
            &Request {
                target: &closed,
                ..req
            },
            soon(),
        )
        .unwrap_err();
    assert!(!e.to_string().contains("secret"), "{e}");
    assert!(
        e.to_string().starts_with(&format!("127.0.0.1:{port}: ")),
        "{e}"
    );
}

#[test]
fn retry_after_is_seconds_or_a_date_and_at_most_an_hour() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
    assert_eq!(retry_after("99999999999999999999", now), Some(MAX_HINT));
    assert_eq!(
        retry_after("Sun, 09 Sep 2001 01:46:50 GMT", now),
        Some(Duration::from_secs(10))
    );
    assert_eq!(retry_after("soon", now), None);
    assert_eq!(retry_after("", now), None);
}

#[test]
fn a_retry_after_of_zero_is_no_busy_loop() {
    let (base, requests) = serve(
        (0..100)
            .map(|_| Some(answer("503 Service Unavailable", "Retry-After: 0\r\n", "")))
            .collect(),
    );
    let target = Target::parse(&base).unwrap();
    let req = Request {
        method: Method::Get,
        target: &target,
        headers: &[],
        body: &[],
    };
    let e = client()
        .send_with_retries(
            &req,
            Instant::now() + Duration::from_secs(1),
            |s| s >= 500,
            &Cancel::default(),
        )
        .unwrap_err();
    // The status, not a timeout of the last try, is what is said.
    assert!(e.to_string().ends_with("answered 503"), "{e}");
    let sent = requests.try_iter().count();
    assert!(sent < 20, "{sent} requests in a second");
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn post<'a>(target: &'a Target, body: &'a [u8]) -> Request<'a> {
    Request {
        method: Method::Post,
        target,
        headers: &[],
        body,
    }
}

#[test]
fn a_307_or_308_to_a_post_is_followed_with_the_post_and_its_body() {
    let (base, requests) = serve(vec![
        Some(answer(
            "308 Permanent Redirect",
            "Location: /moved/1?rid=r\r\n",
            "",
        )),
        Some(answer("307 Temporary Redirect", "Location: again\r\n", "")),
        Some(answer("200 OK", "", "")),
    ]);
    let target = Target::parse(&format!("{base}/uuid/1?rid=r")).unwrap();
    let r = client()
        .send_with_retries(
            &post(&target, b"the tail"),
            soon(),
            |_| false,
            &Cancel::default(),
        )
        .unwrap();
    assert_eq!(r.status, 200);
    let got: Vec<String> = requests.try_iter().collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[1].starts_with("POST /moved/1?rid=r HTTP/1.1"),
        "{got:?}"
    );
    assert!(got[2].starts_with("POST /moved/again HTTP/1.1"), "{got:?}");
    assert!(
        got.iter().all(|r| r.ends_with("\r\n\r\nthe tail")),
        "{got:?}"
    );
}

#[test]
fn a_301_or_302_keeps_the_post_and_a_303_is_a_get_without_the_body() {
    let (base, requests) = serve(vec![
        Some(answer("301 Moved Permanently", "Location: /a\r\n", "")),
        Some(answer("302 Found", "Location: /b\r\n", "")),
        Some(answer("303 See Other", "Location: /c\r\n", "")),
        Some(answer("200 OK", "", "")),
    ]);
    let target = Target::parse(&base).unwrap();
    client().send(&post(&target, b"body"), soon()).unwrap();
    let got: Vec<String> = requests.try_iter().collect();
    for (i, line) in [(1, "POST /a "), (2, "POST /b ")] {
        assert!(
            got[i].starts_with(line) && got[i].ends_with("\r\n\r\nbody"),
            "{got:?}"
        );
    }
    assert!(
        got[3].starts_with("GET /c ") && !got[3].ends_with("body"),
        "{got:?}"
    );
}

#[test]
fn a_redirect_that_cannot_be_followed_is_not_tried_again() {
    for location in ["Location: ftp://127.0.0.1/secret\r\n", ""] {
        let (base, requests) = serve(
            (0..10)
                .map(|_| Some(answer("308 Permanent Redirect", location, "")))
                .collect(),
        );
        let target = Target::parse(&format!("{base}/secret")).unwrap();
        let started = Instant::now();
        let e = client()
            .send_with_retries(&post(&target, b""), soon(), |_| false, &Cancel::default())
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(requests.try_iter().count(), 1, "{e}");
        assert!(e.to_string().contains("answered 308"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
    }
    // Endless redirects: the sixth is not followed, and not tried again.
    let (base, requests) = serve(
        (0..20)
            .map(|_| Some(answer("307 Temporary Redirect", "Location: /again\r\n", "")))
            .collect(),
    );
    let target = Target::parse(&base).unwrap();
    let e = client()
        .send_with_retries(&post(&target, b""), soon(), |_| false, &Cancel::default())
        .unwrap_err();
    assert!(e.to_string().ends_with("more than 5 redirects"), "{e}");
    assert_eq!(requests.try_iter().count(), 6);
}

#[test]
fn a_location_is_resolved_against_the_url_it_answers() {
    let https = Target::parse("https://u:p@hc-ping.com/uuid").unwrap();
    let next = https.redirected("http://hc-ping.com/uuid").unwrap();
    assert!(!next.is_https());
    assert_eq!(
        https.redirected("/other?x=1").unwrap().url(),
        "https://u:p@hc-ping.com/other?x=1"
    );
    assert_eq!(
        https.redirected("//elsewhere:8443/x").unwrap().url(),
        "https://elsewhere:8443/x"
    );
    assert_eq!(
        https.redirected("/x#part").unwrap().url(),
        "https://u:p@hc-ping.com/x"
    );
    assert_eq!(
        https.redirected("sibling").unwrap().url(),
        "https://u:p@hc-ping.com/sibling"
    );
    // As RFC 3986 §5.2 resolves them: a query alone keeps the path, dot
    // segments go, and a scheme is one with no "//" too.
    let deep = Target::parse("http://host/ping/uuid/fail?rid=1").unwrap();
    for (location, want) in [
        ("?rid=2", "http://host/ping/uuid/fail?rid=2"),
        ("../up", "http://host/ping/up"),
        ("./same", "http://host/ping/uuid/same"),
        ("../../../../top", "http://host/top"),
        ("/a/b/../c/./d", "http://host/a/c/d"),
        ("/a/b/..", "http://host/a/"),
        (
            "/next?to=https://elsewhere/x",
            "http://host/next?to=https://elsewhere/x",
        ),
        ("HTTPS://Host/x", "https://Host/x"),
    ] {
        assert_eq!(deep.redirected(location).unwrap().url(), want, "{location}");
    }
    for other_scheme in ["mailto:ops@example.com", "javascript:x"] {
        let e = deep.redirected(other_scheme).unwrap_err();
        assert!(e.contains("expected an http:// or https:// URL"), "{e}");
    }
}

#[test]
fn credentials_follow_a_redirect_to_the_same_host_and_port_only() {
    let from = Target::parse("http://u:p@monitor:8000/uuid").unwrap();
    for (to, shared) in [
        ("http://monitor:8000/elsewhere", true),
        ("http://MONITOR:8000/elsewhere", true),
        ("https://monitor:8000/uuid", true),
        ("http://monitor:9000/uuid", false),
        ("http://other:8000/uuid", false),
    ] {
        let to = Target::parse(to).unwrap();
        assert_eq!(from.shares_credentials_with(&to), shared, "{to:?}");
    }
    // A proxy's redirect to HTTPS on the default ports keeps them.
    let plain = Target::parse("http://u:p@monitor/uuid").unwrap();
    assert!(plain.shares_credentials_with(&Target::parse("https://monitor/uuid").unwrap()));
    assert!(!plain.shares_credentials_with(&Target::parse("https://monitor:8443/uuid").unwrap()));
}

#[test]
fn user_information_is_percent_decoded_into_basic_credentials() {
    let t = Target::parse("https://us%65r:p%40ss@host/x").unwrap();
    // base64("user:p@ss")
    assert_eq!(t.basic_auth().as_deref(), Some("Basic dXNlcjpwQHNz"));
    assert_eq!(t.wire().to_string(), "https://host/x");
    assert_eq!(Target::parse("https://host/x").unwrap().basic_auth(), None);
    let (base, requests) = serve(vec![Some(answer("200 OK", "", ""))]);
    let target = Target::parse(&base.replace("http://", "http://me:p%40ss@")).unwrap();
    client().send(&post(&target, b""), soon()).unwrap();
    let got = requests.recv().unwrap();
    assert!(
        got.contains("authorization: Basic bWU6cEBzcw==\r\n")
            || got.contains("Authorization: Basic bWU6cEBzcw==\r\n"),
        "{got}"
    );
}

#[test]
fn a_refused_connection_is_tried_three_times_only() {
    let closed = Target::parse(&format!("http://127.0.0.1:{}/x", closed_port())).unwrap();
    let started = Instant::now();
    let e = client()
        .send_with_retries(
            &post(&closed, b""),
            Instant::now() + Duration::from_secs(30),
            |_| true,
            &Cancel::default(),
        )
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        e.to_string()
            .ends_with("connection refused 3 times (nothing listens there)"),
        "{e}"
    );
}

#[test]
fn a_cancel_ends_the_pause_between_tries() {
    let (base, _requests) = serve(
        (0..50)
            .map(|_| Some(answer("503 Service Unavailable", "Retry-After: 30\r\n", "")))
            .collect(),
    );
    let target = Target::parse(&base).unwrap();
    let cancel = Cancel::default();
    let canceller = cancel.clone();
    let started = Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let e = client()
        .send_with_retries(
            &post(&target, b""),
            Instant::now() + Duration::from_mins(1),
            |s| s >= 500,
            &cancel,
        )
        .unwrap_err();
    assert!(e.cancelled(), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_server_that_does_not_speak_tls_is_said_so_and_not_tried_again() {
    // A plain HTTP server: it answers what it cannot read (a TLS
    // handshake) with a 400 at once.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, connections) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(10) {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(answer("400 Bad Request", "", "plain http").as_bytes());
            let _ = tx.send(());
        }
    });
    let target = Target::parse(&format!("https://127.0.0.1:{port}/")).unwrap();
    let e = client()
        .send_with_retries(&post(&target, b""), soon(), |_| false, &Cancel::default())
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("TLS failed: the server does not speak TLS there (is its URL http://?)"),
        "{e}"
    );
    assert_eq!(connections.try_iter().count(), 1);
}
