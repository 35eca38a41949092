//! backoff's one HTTP client, for what it sends out itself (check-ins with
//! `--ping`, spans, metrics pushed with `--metrics-push`): blocking, on
//! ureq with rustls and ring, no async runtime.
//!
//! - **Trust**: the system's certificate authorities (`SSL_CERT_FILE` and
//!   `SSL_CERT_DIR` override them, as for OpenSSL), plus the caller's own
//!   when given, loaded by `roots` when the first `https://` connection
//!   needs them.
//! - **Proxies**: `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (the first set,
//!   in that order, each also in lower case) and `NO_PROXY`, as ureq reads
//!   them.
//! - **Redirects**: followed here, not by ureq (which refuses a 307 or
//!   308 to a POST): a 307 or 308 keeps the method and the body (RFC 9110
//!   §15.4.8–9), and so does a 301 or 302 (a monitor takes a POST at the
//!   URL it moved to, and the body is the output); a 303 is followed with
//!   a GET without the body, as it says. Credentials go along only to the
//!   same host and port (or its `https://` from `http://`); `https://` is
//!   never left for `http://`. A redirect that cannot be followed is a
//!   failure that is not tried again, and so is a server's certificate
//!   that is not accepted, or a server that does not speak TLS.
//! - **Time**: a request, redirects and the answer included, ends by its
//!   deadline; `send_with_retries` tries again, with capped exponential
//!   backoff and full jitter (and a server's `Retry-After`), only while the
//!   deadline leaves time, and while a `Cancel` does not end it; a refused
//!   connection (nobody listens) is tried only `REFUSED_TRIES` times.
//! - **Secrets**: a URL is a credential (a check-in's UUID, a token in its
//!   query). Nothing here shows more of it than its host and port
//!   (`Target::host`), errors included.

use std::io::Read;
#[cfg(feature = "tls")]
use std::sync::OnceLock;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use rand::RngExt as _;
#[cfg(feature = "tls")]
use rustls::pki_types::{CertificateDer, pem::PemObject as _};
use ureq::http::Uri;
use ureq::unversioned::transport::{ConnectionDetails, Connector, Transport};

#[cfg(feature = "tls")]
pub mod roots;

/// The most of an answer's body read: what a check-in's answer says is
/// of no use beyond its status.
const MAX_BODY: u64 = 64 * 1024;

/// Redirects followed, at most.
const MAX_REDIRECTS: u32 = 5;

/// The longest `Location` followed.
const MAX_LOCATION: usize = 8 * 1024;

/// The first bound of the pause between tries, doubled after each, up to
/// `MAX_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// The longest `Retry-After` obeyed (the deadline bounds it anyway).
const MAX_HINT: Duration = Duration::from_hours(1);

/// Tries of a request whose connection is refused (nobody listens there,
/// which a few more tries rarely change), with the usual pauses between
/// them: about a second in all, where a timeout or a 5xx keeps the whole
/// deadline.
const REFUSED_TRIES: u32 = 3;

/// An `http://` or `https://` URL, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    uri: Uri,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL is a credential: only its host shows.
        write!(f, "Target({})", self.host())
    }
}

impl Target {
    /// `s` as a target.
    ///
    /// # Errors
    ///
    /// A one-line reason when `s` is not an `http://` or `https://` URL
    /// with a host; it never repeats `s`'s path or query.
    pub fn parse(s: &str) -> Result<Target, String> {
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("a URL has no spaces or control characters".into());
        }
        let scheme = s
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") => {}
            Some(other) if other.len() <= 16 => {
                return Err(format!("'{other}://' is not http:// or https://"));
            }
            _ => return Err("expected an http:// or https:// URL".into()),
        }
        let uri: Uri = s
            .parse()
            .map_err(|_| "not a URL that can be sent to (check its host and port)".to_owned())?;
        if uri.host().is_none_or(str::is_empty) {
            return Err("the URL names no host".into());
        }
        Ok(Target { uri })
    }

    /// Its host, and its port when one is given: all that lines, events
    /// and reports show of it.
    pub fn host(&self) -> String {
        let host = self.uri.host().unwrap_or_default();
        match self.uri.port_u16() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// The whole URL, a credential: for tests only, never for a line.
    #[cfg(test)]
    pub fn url(&self) -> String {
        self.uri.to_string()
    }

    /// Whether it is an `https://` URL.
    pub fn is_https(&self) -> bool {
        self.uri.scheme_str() == Some("https")
    }

    /// Whether it sends a user name or password in clear (`http://` with
    /// user information).
    pub fn cleartext_credentials(&self) -> bool {
        self.uri.scheme_str() == Some("http")
            && self
                .uri
                .authority()
                .is_some_and(|a| a.as_str().contains('@'))
    }

    /// What to say once at the start when it sends credentials in clear
    /// (`cleartext_credentials`), `by` being the option or variable that
    /// gave it.
    pub fn cleartext_notice(&self, by: &str) -> Option<String> {
        self.cleartext_credentials().then(|| {
            format!(
                "{by} sends a user name and password in clear over http:// to {}: use https://",
                self.host()
            )
        })
    }

    /// The URL as sent: without its user information, which goes in an
    /// `Authorization` header (`basic_auth`).
    fn wire(&self) -> Uri {
        let Some(authority) = self.uri.authority() else {
            return self.uri.clone();
        };
        let Some((_, host)) = authority.as_str().rsplit_once('@') else {
            return self.uri.clone();
        };
        let mut parts = self.uri.clone().into_parts();
        parts.authority = host.parse().ok().or(parts.authority);
        Uri::from_parts(parts).unwrap_or_else(|_| self.uri.clone())
    }

    /// The `Authorization` header its user information makes, if it has
    /// any: `Basic` with the user name and password percent-decoded
    /// (`user:p%40ss` sends the password `p@ss`, as curl does).
    fn basic_auth(&self) -> Option<String> {
        let (userinfo, _) = self.uri.authority()?.as_str().rsplit_once('@')?;
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        let mut credentials: Vec<u8> = percent_encoding::percent_decode_str(user).collect();
        credentials.push(b':');
        credentials.extend(percent_encoding::percent_decode_str(password));
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        ))
    }

    /// The target `location` (a redirect's `Location`) names, from this
    /// one, as RFC 3986 §5.2 resolves a reference: an absolute URL, one
    /// without a scheme (`//host/path`), an absolute path, a path relative
    /// to this one's, or a query alone (this path with another query);
    /// `.` and `..` segments are taken out of the path.
    fn redirected(&self, location: &str) -> Result<Target, String> {
        // A fragment is the client's own, never sent.
        let location = location.split('#').next().unwrap_or_default();
        let scheme = self.uri.scheme_str().unwrap_or("http");
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        let absolute = if has_scheme(location) {
            location.to_owned()
        } else if location.starts_with("//") {
            format!("{scheme}:{location}")
        } else {
            let (path, query) = match location.split_once('?') {
                Some((path, query)) => (path, Some(query)),
                None => (location, None),
            };
            let path = if path.is_empty() {
                self.uri.path().to_owned()
            } else if path.starts_with('/') {
                path.to_owned()
            } else {
                let base = self.uri.path();
                format!("{}{path}", &base[..base.rfind('/').map_or(0, |i| i + 1)])
            };
            let query = query.map(|q| format!("?{q}")).unwrap_or_default();
            format!(
                "{scheme}://{authority}{}{query}",
                without_dot_segments(&path)
            )
        };
        Target::parse(&absolute)
    }

    /// Whether credentials given for this URL may go on to `next`, where
    /// a redirect leads: the same host and port (as curl has it), or the
    /// same host's `https://` from its `http://` on their default ports
    /// (a proxy's redirect to HTTPS).
    fn shares_credentials_with(&self, next: &Target) -> bool {
        let port = |t: &Target| {
            t.uri
                .port_u16()
                .unwrap_or(if t.is_https() { 443 } else { 80 })
        };
        let same_host = match (self.uri.host(), next.uri.host()) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => false,
        };
        same_host && (port(self) == port(next) || (port(self), port(next)) == (80, 443))
    }

    /// This URL with `/segment` added to its path, before its query:
    /// `https://hc-ping.com/UUID` becomes `https://hc-ping.com/UUID/start`.
    #[must_use]
    pub fn join(&self, segment: &str) -> Target {
        let path = self.uri.path().trim_end_matches('/');
        let query = self
            .uri
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        self.with_path_and_query(&format!("{path}/{segment}{query}"))
    }

    /// This URL with `key=value` added to its query (the value
    /// percent-encoded).
    #[must_use]
    pub fn with_query(&self, key: &str, value: &str) -> Target {
        let encoded: String = value
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let query = match self.uri.query() {
            Some(q) if !q.is_empty() => format!("{q}&{key}={encoded}"),
            _ => format!("{key}={encoded}"),
        };
        self.with_path_and_query(&format!("{}?{query}", self.uri.path()))
    }

    fn with_path_and_query(&self, pq: &str) -> Target {
        let mut parts = self.uri.clone().into_parts();
        parts.path_and_query = pq.parse().ok().or(parts.path_and_query);
        Target {
            uri: Uri::from_parts(parts).unwrap_or_else(|_| self.uri.clone()),
        }
    }
}

/// How a request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET, with no body.
    Get,
    /// POST, with a body.
    Post,
    /// PUT, with a body.
    Put,
}

/// A request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// GET, POST or PUT.
    pub method: Method,
    /// Where to.
    pub target: &'a Target,
    /// Its headers, besides the client's own (User-Agent).
    pub headers: &'a [(String, String)],
    /// The body of a POST or a PUT.
    pub body: &'a [u8],
}

/// What a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Its status.
    pub status: u16,
    /// Its `Retry-After`, when it gave a valid one.
    pub retry_after: Option<Duration>,
    /// Its `Location`, when it gave one, not empty, of at most
    /// `MAX_LOCATION` bytes.
    pub location: Option<String>,
    /// The start of its body (at most 64 KiB).
    pub body: Vec<u8>,
    /// Its `Ping-Body-Limit` (what a Healthchecks keeps of a check-in's
    /// body), as sent, when it is text.
    pub ping_body_limit: Option<String>,
}

/// Why a request got no answer, or no good one, in a line that names only
/// the target's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    host: String,
    why: String,
    /// The status, when the server answered.
    pub status: Option<u16>,
    kind: Kind,
}

/// What a failure says of trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Worth another try while time is left: a timeout, a reset, a 5xx.
    Passing,
    /// Nobody listens there: worth a few tries only (`REFUSED_TRIES`).
    Refused,
    /// The same again whatever the time: a redirect that cannot be
    /// followed.
    Final,
    /// A `Cancel` ended it.
    Cancelled,
}

impl Failure {
    fn new(host: String, why: String, kind: Kind) -> Failure {
        Failure {
            host,
            why,
            status: None,
            kind,
        }
    }

    /// Whether a `Cancel` ended it (it was given up, not failed).
    pub fn cancelled(&self) -> bool {
        self.kind == Kind::Cancelled
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.host, self.why)
    }
}

/// Ends `Client::send_with_retries` at its next pause, from another
/// thread: when a terminating signal gives up what is being sent. A clone
/// shares it.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<(Mutex<bool>, Condvar)>);

impl Cancel {
    /// Ends the sending it was given to, and wakes its pause.
    pub fn cancel(&self) {
        let (flag, woken) = &*self.0;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        woken.notify_all();
    }

    /// Whether `cancel` was called.
    pub fn cancelled(&self) -> bool {
        *self.0.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits `pause`, or until `cancel` is called; whether it was.
    fn pause(&self, pause: Duration) -> bool {
        let (flag, woken) = &*self.0;
        let guard = flag.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = woken
            .wait_timeout_while(guard, pause, |cancelled| !*cancelled)
            .unwrap_or_else(PoisonError::into_inner);
        *guard
    }
}

/// backoff's HTTP client; a clone shares its connections.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    /// Redirects followed, at most.
    redirects: u32,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

/// Whether `reference` begins with a scheme (`https:`, `mailto:`): RFC
/// 3986's letter, then letters, digits, `+`, `-` or `.`, then `:`, before
/// any `/`, `?` or `#` (a relative path's first segment has no `:`).
fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// `path` (absolute) without its `.` and `..` segments (RFC 3986
/// §5.2.4): `/a/b/../c` is `/a/c`, and `..` never goes above `/`.
fn without_dot_segments(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut dot_last = false;
    for segment in path.split('/').skip(1) {
        dot_last = matches!(segment, "." | "..");
        match segment {
            "." => {}
            ".." => {
                kept.pop();
            }
            _ => kept.push(segment),
        }
    }
    let mut out = format!("/{}", kept.join("/"));
    if dot_last && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Whether `status` is a redirect this client follows.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

impl Client {
    /// A client that trusts the system's certificate authorities, and
    /// those of `extra_ca` (PEM) when given. They are loaded when the first
    /// `https://` connection is made (see `roots`): a client that reaches
    /// `http://` URLs alone loads none, and cannot be held up by what
    /// `SSL_CERT_FILE` names.
    ///
    /// # Errors
    ///
    /// When `extra_ca` holds no certificate.
    pub fn new(extra_ca: Option<&[u8]>) -> Result<Client, String> {
        Client::with_redirects(extra_ca, MAX_REDIRECTS)
    }

    /// The same, following at most `redirects` redirects (see the
    /// module's notes): with 0, a redirect is an answer like any other.
    ///
    /// # Errors
    ///
    /// As `new`.
    pub fn with_redirects(extra_ca: Option<&[u8]>, redirects: u32) -> Result<Client, String> {
        // Redirects are followed by `send`: ureq gives each as an answer.
        let config = ureq::Agent::config_builder()
            .proxy(ureq::Proxy::try_from_env())
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("backoff/", env!("CARGO_PKG_VERSION")))
            .build();
        let agent = ureq::Agent::with_parts(
            config,
            connector(extra_ca)?,
            ureq::unversioned::resolver::DefaultResolver::default(),
        );
        Ok(Client { agent, redirects })
    }

    /// Sends `req` once, following redirects; its whole exchange ends by
    /// `deadline`.
    ///
    /// # Errors
    ///
    /// When no answer came, or a redirect could not be followed: why,
    /// naming only the host (and the one it was redirected to).
    pub fn send(&self, req: &Request<'_>, deadline: Instant) -> Result<Response, Failure> {
        let host = req.target.host();
        let mut target = req.target.clone();
        let mut method = req.method;
        let mut body = req.body;
        let mut auth = target.basic_auth();
        let mut hops = 0;
        loop {
            // What is said names the host asked, and the one it led to.
            let fail = |why: String, kind: Kind| {
                let why = if target.host() == host {
                    why
                } else {
                    format!("redirected to {}: {why}", target.host())
                };
                Failure::new(host.clone(), why, kind)
            };
            let response = self
                .send_once(
                    method,
                    &target,
                    auth.as_deref(),
                    req.headers,
                    body,
                    deadline,
                )
                .map_err(|(why, kind)| fail(why, kind))?;
            if !is_redirect(response.status) || self.redirects == 0 {
                return Ok(response);
            }
            if hops == self.redirects {
                return Err(fail(
                    format!("more than {} redirects", self.redirects),
                    Kind::Final,
                ));
            }
            hops += 1;
            let status = response.status;
            let Some(location) = response.location else {
                return Err(fail(
                    format!("answered {status} with no Location it could follow"),
                    Kind::Final,
                ));
            };
            let next = target.redirected(&location).map_err(|why| {
                fail(
                    format!("answered {status}, to a URL that cannot be followed ({why})"),
                    Kind::Final,
                )
            })?;
            if target.is_https() && !next.is_https() {
                return Err(fail(
                    format!(
                        "answered {status}, to http:// at {}: not followed (an https:// URL is not sent in clear)",
                        next.host()
                    ),
                    Kind::Final,
                ));
            }
            if status == 303 {
                method = Method::Get;
                body = &[];
            }
            // Credentials go to the same host and port only, unless the
            // new URL has its own.
            auth = next.basic_auth().or_else(|| {
                auth.take()
                    .filter(|_| target.shares_credentials_with(&next))
            });
            target = next;
        }
    }

    /// Sends one request, redirects not followed; why it failed and what
    /// that says of trying again.
    fn send_once(
        &self,
        method: Method,
        target: &Target,
        auth: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
        deadline: Instant,
    ) -> Result<Response, (String, Kind)> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(("no time left".into(), Kind::Passing));
        }
        let uri = target.wire();
        let answer = if method == Method::Get {
            let r = self
                .agent
                .get(uri)
                .config()
                .timeout_global(Some(left))
                .build();
            with_headers(r, headers, auth).call()
        } else {
            let r = if method == Method::Put {
                self.agent.put(uri)
            } else {
                self.agent.post(uri)
            };
            let r = r.config().timeout_global(Some(left)).build();
            with_headers(r, headers, auth).send(body)
        };
        let mut response = answer.map_err(|e| {
            if refused(&e) {
                ("connection refused".to_owned(), Kind::Refused)
            } else if certificate_refused(&e) || untrusted(&e) {
                (describe(&e, left), Kind::Final)
            } else {
                (describe(&e, left), Kind::Passing)
            }
        })?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header("retry-after").and_then(|v| retry_after(&v, SystemTime::now()));
        // An empty one names this same URL again: none to follow.
        let location = header("location")
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty() && l.len() <= MAX_LOCATION);
        let ping_body_limit = header("ping-body-limit");
        let mut body = Vec::new();
        let _ = response
            .body_mut()
            .as_reader()
            .take(MAX_BODY)
            .read_to_end(&mut body);
        Ok(Response {
            status,
            retry_after,
            location,
            body,
            ping_body_limit,
        })
    }

    /// Sends `req` until a server answers with a status that is not
    /// `retryable` (a 2xx or a 4xx, for most), trying again after a
    /// connection that failed, a try that timed out, or a `retryable`
    /// status, while `deadline` leaves time and `cancel` is not called:
    /// after a pause drawn with full jitter under a bound that doubles
    /// from 200 ms to 2 s, or the server's `Retry-After` if it fits. A
    /// refused connection is tried `REFUSED_TRIES` times at most, and a
    /// redirect that cannot be followed once.
    ///
    /// # Errors
    ///
    /// The last failure, when no try got such an answer; a `retryable`
    /// status is one (`answered 503`).
    pub fn send_with_retries(
        &self,
        req: &Request<'_>,
        deadline: Instant,
        retryable: impl Fn(u16) -> bool,
        cancel: &Cancel,
    ) -> Result<Response, Failure> {
        let mut bound = FIRST_PAUSE;
        // The last failure that was an answer (a status).
        let mut answered: Option<Failure> = None;
        let mut refusals = 0;
        loop {
            let (failure, hint) = match self.send(req, deadline) {
                Ok(r) if !retryable(r.status) => return Ok(r),
                Ok(r) => (
                    Failure {
                        status: Some(r.status),
                        ..Failure::new(
                            req.target.host(),
                            format!("answered {}", r.status),
                            Kind::Passing,
                        )
                    },
                    r.retry_after,
                ),
                Err(f) => (f, None),
            };
            match failure.kind {
                Kind::Final | Kind::Cancelled => return Err(failure),
                Kind::Refused => refusals += 1,
                Kind::Passing => {}
            }
            if refusals == REFUSED_TRIES {
                return Err(Failure {
                    why: format!(
                        "{} {REFUSED_TRIES} times (nothing listens there)",
                        failure.why
                    ),
                    ..failure
                });
            }
            // A status says more than a timeout that followed it.
            let failure = match (failure.status, answered.take()) {
                (None, Some(before)) => before,
                _ => failure,
            };
            if failure.status.is_some() {
                answered = Some(failure.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            // A hint is a floor: `Retry-After: 0` does not make a busy loop.
            let drawn = rand::rng().random_range(Duration::ZERO..=bound);
            let pause = hint.map_or(drawn, |h| h.max(drawn));
            if pause >= left {
                return Err(failure);
            }
            if cancel.pause(pause) {
                return Err(Failure {
                    kind: Kind::Cancelled,
                    ..failure
                });
            }
            bound = (bound * 2).min(MAX_PAUSE);
        }
    }
}

/// `r` with `headers`, and `auth` as its `Authorization` when given.
fn with_headers<B>(
    mut r: ureq::RequestBuilder<B>,
    headers: &[(String, String)],
    auth: Option<&str>,
) -> ureq::RequestBuilder<B> {
    for (k, v) in headers {
        r = r.header(k, v);
    }
    if let Some(auth) = auth {
        r = r.header("Authorization", auth);
    }
    r
}

/// Whether `e` is a refused connection: nobody listens there.
fn refused(e: &ureq::Error) -> bool {
    matches!(e, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// How a connection is made: through a proxy when one is set, over TCP,
/// then TLS for `https://` with the authorities loaded at that moment.
#[cfg(feature = "tls")]
fn connector(extra_ca: Option<&[u8]>) -> Result<impl Connector, String> {
    use ureq::unversioned::transport::{ConnectProxyConnector, TcpConnector};
    let extra: Vec<CertificateDer<'static>> = match extra_ca {
        None => Vec::new(),
        Some(pem) => {
            let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
                .filter_map(Result::ok)
                .collect();
            if certs.is_empty() {
                return Err("the certificate file holds no PEM certificate".into());
            }
            certs
        }
    };
    Ok(
        ().chain(ConnectProxyConnector::default())
            .chain(TcpConnector::default())
            .chain(LazyTls {
                extra,
                config: OnceLock::new(),
                tls: ureq::unversioned::transport::RustlsConnector::default(),
            }),
    )
}

/// How a connection is made in a build without TLS: an `https://` URL,
/// given or redirected to, is refused.
#[cfg(not(feature = "tls"))]
fn connector(extra_ca: Option<&[u8]>) -> Result<impl Connector, String> {
    use ureq::unversioned::transport::{ConnectProxyConnector, TcpConnector};
    if extra_ca.is_some() {
        return Err(NO_TLS.into());
    }
    Ok(
        ().chain(ConnectProxyConnector::default())
            .chain(TcpConnector::default())
            .chain(NoTls),
    )
}

/// TLS for `https://` connections (ureq's rustls connector), with a
/// configuration made when the first one is: the authorities `roots`
/// loads, and the client's own.
#[cfg(feature = "tls")]
#[derive(Debug)]
struct LazyTls {
    extra: Vec<CertificateDer<'static>>,
    config: OnceLock<Result<ureq::config::Config, String>>,
    tls: ureq::unversioned::transport::RustlsConnector,
}

#[cfg(feature = "tls")]
impl LazyTls {
    /// The configuration the TLS connector reads (its authorities and
    /// crypto, and ureq's default buffers), made once.
    fn config(&self) -> Result<&ureq::config::Config, String> {
        self.config
            .get_or_init(|| {
                let roots: Vec<ureq::tls::Certificate<'static>> = roots::system()?
                    .iter()
                    .chain(&self.extra)
                    .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
                    .collect();
                let tls = ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(roots)))
                    .unversioned_rustls_crypto_provider(Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .build();
                Ok(ureq::Agent::config_builder().tls_config(tls).build())
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[cfg(feature = "tls")]
impl<In: Transport> Connector<In> for LazyTls {
    type Out = <ureq::unversioned::transport::RustlsConnector as Connector<In>>::Out;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return self.tls.connect(details, Some(transport));
        }
        let config = self
            .config()
            .map_err(|why| ureq::Error::Io(std::io::Error::other(Untrusted(why))))?;
        let details = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: details.register_shutdown.clone(),
        };
        self.tls.connect(&details, Some(transport))
    }
}

/// Why no authority can be trusted (`roots`): a line of its own.
#[derive(Debug)]
struct Untrusted(String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Untrusted {}

/// Whether `e` says that no certificate authority can be trusted.
fn untrusted(e: &ureq::Error) -> bool {
    let ureq::Error::Io(io) = e else {
        return false;
    };
    io.get_ref()
        .is_some_and(<dyn std::error::Error + Send + Sync>::is::<Untrusted>)
}

/// Refuses `https://` in a build without TLS.
#[cfg(not(feature = "tls"))]
#[derive(Debug)]
struct NoTls;

#[cfg(not(feature = "tls"))]
impl<In: Transport> Connector<In> for NoTls {
    type Out = In;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<In>, ureq::Error> {
        if details.needs_tls() {
            return Err(ureq::Error::Io(std::io::Error::other(Untrusted(
                NO_TLS.into(),
            ))));
        }
        Ok(chained)
    }
}

/// Why a build without TLS cannot reach an `https://` URL.
#[cfg(not(feature = "tls"))]
pub const NO_TLS: &str =
    "this build of backoff has no TLS (cargo feature \"tls\"): https:// URLs cannot be reached";

/// A `Retry-After` value: delay-seconds or an HTTP-date, at most an hour.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty() {
        Duration::from_secs(
            value
                .parse::<u64>()
                .unwrap_or(u64::MAX)
                .min(MAX_HINT.as_secs()),
        )
    } else {
        httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .unwrap_or_default()
    };
    Some(wait.min(MAX_HINT))
}

/// What a failed TLS handshake says when nothing more precise is known.
const TLS_FAILED: &str =
    "TLS failed (is its certificate trusted? SSL_CERT_FILE names the authorities to trust)";

/// Why a request failed, in a few words that hold nothing of its URL.
fn describe(e: &ureq::Error, limit: Duration) -> String {
    #[cfg(feature = "tls")]
    if let Some(tls) = rustls_error(e) {
        return describe_tls(tls);
    }
    match e {
        ureq::Error::Timeout(_) => format!("timed out after {}", crate::duration::human(limit)),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::Tls(_) => TLS_FAILED.into(),
        ureq::Error::ConnectProxyFailed(_) | ureq::Error::InvalidProxyUrl => {
            "the proxy (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) failed".into()
        }
        ureq::Error::Io(io) if untrusted(e) => io.to_string(),
        ureq::Error::Io(io) if io.to_string().contains("certificate") => format!(
            "{} (SSL_CERT_FILE names the authorities to trust)",
            crate::classify::describe(io)
        ),
        ureq::Error::Io(io) => crate::classify::describe(io),
        ureq::Error::BodyStalled => "the server stopped sending".into(),
        ureq::Error::LargeResponseHeader(..) => "the answer's headers are too large".into(),
        _ => "the exchange failed".into(),
    }
}

/// Whether `e` is the server's certificate not accepted, or a server
/// that does not speak TLS: the same at the next try.
fn certificate_refused(e: &ureq::Error) -> bool {
    #[cfg(feature = "tls")]
    return matches!(
        rustls_error(e),
        Some(
            rustls::Error::InvalidCertificate(_)
                | rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
        )
    );
    #[cfg(not(feature = "tls"))]
    {
        let _ = e;
        false
    }
}

/// The TLS error behind `e`, if it is one: given as it is, or inside the
/// I/O error of the handshake.
#[cfg(feature = "tls")]
fn rustls_error(e: &ureq::Error) -> Option<&rustls::Error> {
    match e {
        ureq::Error::Rustls(tls) => Some(tls),
        ureq::Error::Io(io) => io.get_ref()?.downcast_ref::<rustls::Error>(),
        _ => None,
    }
}

/// A TLS error as a sentence: what is wrong with the server's certificate
/// and what to do, for those a user meets; a general one otherwise (never
/// the library's own words, which are its types' names).
#[cfg(feature = "tls")]
fn describe_tls(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    const TRUST: &str = "SSL_CERT_FILE names the authorities to trust";
    let rustls::Error::InvalidCertificate(cert) = e else {
        return match e {
            rustls::Error::NoCertificatesPresented => {
                "TLS failed: the server sent no certificate".into()
            }
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
                "TLS failed: the server does not speak TLS there (is its URL http://?)".into()
            }
            rustls::Error::AlertReceived(_) => {
                "TLS failed: the server refused the connection (does it ask for a client certificate, or speak none of the same TLS versions?)".into()
            }
            _ => TLS_FAILED.into(),
        };
    };
    let what = match cert {
        C::UnknownIssuer => {
            format!("its certificate is signed by an authority that is not trusted ({TRUST})")
        }
        C::Expired | C::ExpiredContext { .. } => "its certificate has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "its certificate is not valid yet (is this machine's clock right?)".into()
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "its certificate is for another name than the URL's host".into()
        }
        C::Revoked => "its certificate was revoked".into(),
        C::BadSignature => "its certificate's signature does not check".into(),
        C::BadEncoding => "its certificate cannot be read".into(),
        // Not mapped by rustls to a variant of its own.
        C::Other(other) if format!("{other:?}").contains("CaUsedAsEndEntity") => format!(
            "it presents a certificate authority's own certificate, not one issued for it ({TRUST}; the server must use a certificate that authority signed)"
        ),
        _ => format!("its certificate is not accepted ({TRUST})"),
    };
    format!("TLS failed: {what}")
}

#[cfg(test)]
mod tests;
