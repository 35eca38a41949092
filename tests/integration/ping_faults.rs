//! Check-ins where something is slightly off: a real Caddy that redirects
//! them with 308 (to http://, and to https:// with its own authority), a
//! monitor nobody listens for, a signal while the end check-in waits to
//! try again, credentials in the URL.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fleet::free_port;
use crate::http::refused_url;
use crate::pings::Monitor;
use crate::support::{PATIENCE, Running, TempDir, backoff, command, eventually};

const UUID: &str = "0c9e4f1a-redirected-check";

/// A real Caddy of the test's own (Debian's `caddy`), stopped when
/// dropped: `http` redirects with 308 to the same path on the backend
/// (http://), and `to_https` with 308 to `https`, which has a certificate
/// of Caddy's local authority (`root_ca`) and passes requests on to the
/// backend, but for those under `/down/`, redirected with 308 to the
/// backend over http://; `relative` redirects with a relative `Location`
/// (a query alone under `/q/`, `../../up` and the path under `/d/`) and
/// passes on the rest to the backend, its path as it came.
struct Caddy {
    child: Child,
    dir: TempDir,
    http: u16,
    to_https: u16,
    https: u16,
    relative: u16,
}

impl Caddy {
    /// Started in front of `backend` (a port of 127.0.0.1); `None`, said
    /// on one line naming `test`, where caddy is not installed.
    fn start(test: &str, backend: u16) -> Option<Caddy> {
        let dir = TempDir::new("caddy");
        let (http, to_https, https, relative) =
            (free_port(), free_port(), free_port(), free_port());
        let config = format!(
            "{{
	admin off
	storage file_system {data}
	skip_install_trust
	auto_https disable_redirects
	http_port {to_https}
	https_port {https}
	log {{
		output discard
	}}
}}
http://127.0.0.1:{http} {{
	redir http://127.0.0.1:{backend}{{uri}} 308
}}
http://127.0.0.1:{to_https} {{
	redir https://127.0.0.1:{https}{{uri}} 308
}}
https://127.0.0.1:{https} {{
	tls internal
	redir /down/* http://127.0.0.1:{backend}{{uri}} 308
	reverse_proxy 127.0.0.1:{backend}
}}
http://127.0.0.1:{relative} {{
	@query {{
		path /q/*
		not query moved=1
	}}
	redir @query ?moved=1 308
	redir /d/* ../../up{{path}} 308
	reverse_proxy 127.0.0.1:{backend}
}}
",
            data = dir.join("data").display()
        );
        std::fs::write(dir.join("Caddyfile"), config).unwrap();
        let spawned = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("skipped {test}: caddy is not installed (apt-get install caddy)");
                return None;
            }
            Err(e) => panic!("caddy: {e}"),
        };
        let caddy = Caddy {
            child,
            dir,
            http,
            to_https,
            https,
            relative,
        };
        eventually("caddy listens and has made its authority", || {
            caddy.root_ca().exists()
                && [http, to_https, https, relative]
                    .iter()
                    .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok())
        });
        Some(caddy)
    }

    /// The root certificate of Caddy's local authority.
    fn root_ca(&self) -> std::path::PathBuf {
        self.dir.join("data/pki/authorities/local/root.crt")
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `cmd`, a run that succeeds (a check-in never changes that),
/// said on stderr.
fn succeeds_saying(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd
        .timeout(PATIENCE)
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The port of a monitor's URL.
fn port_of(m: &Monitor) -> u16 {
    let url = m.url("");
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap();
    port.parse().unwrap()
}

#[test]
fn a_308_from_caddy_is_followed_with_the_post_and_its_body_to_http_and_https() {
    let m = Monitor::start("ok");
    let Some(caddy) = Caddy::start(
        "a_308_from_caddy_is_followed_with_the_post_and_its_body_to_http_and_https",
        port_of(&m),
    ) else {
        return;
    };
    let run = |port: u16, ca: Option<&std::path::Path>| {
        let mut cmd = backoff([
            "--ping",
            &format!("http://127.0.0.1:{port}/{UUID}"),
            "--ping-timeout",
            "1m",
            "--max-retries",
            "0",
            "--",
            "sh",
            "-c",
            "echo the final error; exit 3",
        ]);
        if let Some(ca) = ca {
            cmd.env("SSL_CERT_FILE", ca);
        }
        let out = cmd.timeout(PATIENCE).assert().code(3).get_output().clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // To http://, then through https:// with Caddy's authority trusted:
    // the start GET and the end POST, body and all, reach the monitor.
    for (port, ca, seen) in [
        (caddy.http, None, 0),
        (caddy.to_https, Some(caddy.root_ca()), 2),
    ] {
        let stderr = run(port, ca.as_deref());
        assert!(!stderr.contains("check-in"), "{stderr}");
        let got = m.requests(seen + 2);
        assert!(
            got[seen].starts_with(&format!("GET /{UUID}/start?rid=")),
            "{got:?}"
        );
        let end = &got[seen + 1];
        assert!(end.starts_with(&format!("POST /{UUID}/3?rid=")), "{end}");
        assert!(end.contains("exit status 3\\nthe final error\\n"), "{end}");
    }
    // Caddy's authority not trusted: one plain sentence, at once (not
    // tried again until --ping-timeout, a minute here).
    let started = Instant::now();
    let stderr = run(caddy.to_https, None);
    assert!(
        stderr.contains(&format!(
            "the start and end check-ins failed: 127.0.0.1:{}: redirected to 127.0.0.1:",
            caddy.to_https
        )) && stderr.contains(
            "TLS failed: its certificate is signed by an authority that is not trusted (SSL_CERT_FILE names the authorities to trust)"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Other(") && !stderr.contains(UUID),
        "{stderr}"
    );
    assert_eq!(m.dir_lines().len(), 4);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // From https:// to http://: not followed, and not tried again until
    // --ping-timeout.
    let started = Instant::now();
    let stderr = succeeds_saying(
        backoff([
            "--ping",
            &format!("https://127.0.0.1:{}/down/{UUID}", caddy.https),
            "--ping-timeout",
            "1m",
            "--",
            "true",
        ])
        .env("SSL_CERT_FILE", caddy.root_ca()),
    );
    assert!(
        stderr.contains("check-ins failed: 127.0.0.1:")
            && stderr.contains("answered 308, to http:// at 127.0.0.1:")
            && stderr.contains("not followed (an https:// URL is not sent in clear)"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        m.dir_lines().len(),
        4,
        "nothing reached the monitor in clear"
    );
}

#[test]
fn a_monitor_nobody_listens_for_costs_about_a_second_not_the_timeout() {
    let url = format!("{}{UUID}", refused_url());
    let started = Instant::now();
    // The collector of the spans too, whose timeout is 10 s as well.
    let stderr = succeeds_saying(
        backoff(["--ping", &url, "--", "true"]).env("OTEL_EXPORTER_OTLP_ENDPOINT", refused_url()),
    );
    let took = started.elapsed();
    // Three tries each, about a second, where --ping-timeout is 10 s.
    assert!(took < Duration::from_secs(4), "{took:?}");
    for what in [
        "the start and end check-ins failed: 127.0.0.1:",
        "the trace was not exported: 127.0.0.1:",
    ] {
        let line = stderr
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_default();
        assert!(
            line.ends_with("connection refused 3 times (nothing listens there)"),
            "{stderr}"
        );
    }
    assert!(!stderr.contains(UUID), "{stderr}");
}

#[test]
fn a_signal_while_the_end_check_in_waits_to_try_again_gives_it_up_at_once() {
    let m = Monitor::start("fail");
    let mut run = Running::start(command([
        "--log-format",
        "json",
        "--ping",
        &m.url(UUID),
        "--ping-timeout",
        "10m",
        "--",
        "true",
    ]));
    // The run is over, and the monitor has refused check-ins with 500:
    // backoff is between two tries.
    run.wait_for("\"event\":\"success\"");
    eventually("check-ins tried again", || m.dir_lines().len() >= 3);
    run.dies_by_within_a_second(libc::SIGTERM);
    let given_up = run.wait_for("given up");
    assert!(
        given_up.contains("the end check-in was given up: backoff received SIGTERM"),
        "{given_up}"
    );
}

/// A server on 127.0.0.1 that answers `count` requests with 200 and
/// hands on each request's head.
fn recording(count: usize) -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(PATIENCE));
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut head, mut length) = (String::new(), 0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let _ = std::io::Read::read_exact(&mut reader, &mut vec![0; length]);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send(head);
        }
    });
    (port, rx)
}

#[test]
fn relative_redirects_credentials_and_plain_http_through_caddy() {
    let (backend, heads) = recording(6);
    let Some(caddy) = Caddy::start(
        "relative_redirects_credentials_and_plain_http_through_caddy",
        backend,
    ) else {
        return;
    };
    // To another port of the same host: another service, which gets the
    // check-ins and not the credentials.
    let url = format!("http://backup:s3cret@127.0.0.1:{}/{UUID}", caddy.http);
    succeeds_saying(&mut backoff(["--ping", &url, "--", "true"]));
    // A query alone keeps the path; "../" goes up from it, not sent as is.
    for under in ["q", "d"] {
        let url = format!("http://127.0.0.1:{}/{under}/{UUID}", caddy.relative);
        let stderr = succeeds_saying(&mut backoff(["--ping", &url, "--", "true"]));
        assert!(!stderr.contains("check-in"), "{stderr}");
    }
    // https:// to a server that speaks plain HTTP: said so, at once.
    let started = Instant::now();
    let url = format!("https://127.0.0.1:{}/q/{UUID}", caddy.relative);
    let stderr = succeeds_saying(&mut backoff([
        "--ping",
        &url,
        "--ping-timeout",
        "1m",
        "--",
        "true",
    ]));
    assert!(
        stderr.contains("TLS failed: the server does not speak TLS there (is its URL http://?)"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let got: Vec<String> = (0..6)
        .map(|_| heads.recv_timeout(PATIENCE).unwrap())
        .collect();
    let first_lines: Vec<&str> = got.iter().map(|h| h.lines().next().unwrap()).collect();
    for (i, want) in [
        format!("GET /{UUID}/start?rid="),
        format!("POST /{UUID}?rid="),
        format!("GET /q/{UUID}/start?moved=1 "),
        format!("POST /q/{UUID}?moved=1 "),
        format!("GET /up/d/{UUID}/start "),
        format!("POST /up/d/{UUID} "),
    ]
    .iter()
    .enumerate()
    {
        assert!(first_lines[i].starts_with(want.as_str()), "{first_lines:?}");
    }
    assert!(
        got.iter()
            .all(|h| !h.to_ascii_lowercase().contains("authorization")),
        "{got:?}"
    );
}

#[test]
fn credentials_in_the_url_are_percent_decoded_and_over_http_said_for_otlp_too() {
    let (port, heads) = recording(2);
    let url = format!("http://backup:p%40ss%3Aw0rd@127.0.0.1:{port}/{UUID}");
    let stderr = succeeds_saying(backoff(["--ping", &url, "--", "true"]).env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        refused_url().replace("http://", "http://u:tok3n@"),
    ));
    for by in ["--ping", "OTEL_EXPORTER_OTLP_ENDPOINT"] {
        assert!(
            stderr.contains(&format!(
                "{by} sends a user name and password in clear over http://"
            )),
            "{stderr}"
        );
    }
    assert!(
        !stderr.contains("tok3n") && !stderr.contains("w0rd"),
        "{stderr}"
    );
    // base64("backup:p@ss:w0rd"): the password as the user wrote it before
    // it was percent-encoded for the URL.
    for _ in 0..2 {
        let head = heads.recv_timeout(PATIENCE).unwrap();
        assert!(
            head.to_ascii_lowercase()
                .contains("authorization: basic ymfja3vwonbac3m6dzbyza==\r\n"),
            "{head}"
        );
    }
}

/// A server whose certificate is its authority's own (`ca.pem`), as a
/// self-signed certificate made for a CA often is.
const CA_AS_LEAF: &str = r#"
import http.server, os, shutil, socketserver, ssl, sys
port_file, log, mode, tls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "tls"
shutil.copy("ca.pem", "cert.pem")
shutil.copy("ca.key", "key.pem")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
"#;

#[test]
fn a_tls_failure_is_a_sentence_not_the_librarys_debug_text() {
    let server = crate::support::PyServer::start(
        &format!("{CA_AS_LEAF}{}", crate::support::PY_SERVE),
        "ca",
        true,
        None,
    );
    let stderr = succeeds_saying(
        backoff([
            "--ping",
            &format!("{}/{UUID}", server.origin()),
            "--ping-timeout",
            "2s",
            "--",
            "true",
        ])
        .env("SSL_CERT_FILE", server.dir.join("ca.pem")),
    );
    assert!(
        stderr.contains(
            "TLS failed: it presents a certificate authority's own certificate, not one issued for it"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Other(") && !stderr.contains("CaUsedAsEndEntity"),
        "{stderr}"
    );
}
