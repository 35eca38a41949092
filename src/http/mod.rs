//! backoff's one HTTP client, for what it sends out itself (check-ins with
//! `--ping`): blocking, on ureq with rustls and ring, no async runtime.
//!
//! - **Trust**: the system's certificate authorities (`SSL_CERT_FILE` and
//!   `SSL_CERT_DIR` override them, as for OpenSSL), plus the caller's own
//!   when given, loaded by `roots` when the first `https://` connection
//!   needs them.
//! - **Proxies**: `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (the first set,
//!   in that order, each also in lower case) and `NO_PROXY`, as ureq reads
//!   them.
//! - **Time**: a request, redirects and the answer included, ends by its
//!   deadline; `send_with_retries` tries again, with capped exponential
//!   backoff and full jitter (and a server's `Retry-After`), only while the
//!   deadline leaves time.
//! - **Secrets**: a URL is a credential (a check-in's UUID, a token in its
//!   query). Nothing here shows more of it than its host and port
//!   (`Target::host`), errors included.

use std::io::Read;
#[cfg(feature = "tls")]
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

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

/// The first bound of the pause between tries, doubled after each, up to
/// `MAX_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// The longest `Retry-After` obeyed (the deadline bounds it anyway).
const MAX_HINT: Duration = Duration::from_hours(1);

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
}

/// A request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// GET or POST.
    pub method: Method,
    /// Where to.
    pub target: &'a Target,
    /// Its headers, besides the client's own (User-Agent).
    pub headers: &'a [(String, String)],
    /// The body of a POST.
    pub body: &'a [u8],
}

/// What a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Its status.
    pub status: u16,
    /// Its `Retry-After`, when it gave a valid one.
    pub retry_after: Option<Duration>,
    /// The start of its body (at most 64 KiB).
    pub body: Vec<u8>,
}

/// Why a request got no answer, or no good one, in a line that names only
/// the target's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    host: String,
    why: String,
    /// The status, when the server answered.
    pub status: Option<u16>,
    /// Whether trying again cannot help: no certificate authority can be
    /// trusted as the environment names them.
    lasting: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.host, self.why)
    }
}

/// backoff's HTTP client; a clone shares its connections.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
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

    /// The same, following at most `redirects` redirects: with 0, a
    /// redirect is an answer like any other (a POST redirected with 301,
    /// 302 or 303 would be sent again as a GET without its body, and
    /// with the caller's headers to another host).
    ///
    /// # Errors
    ///
    /// As `new`.
    pub fn with_redirects(extra_ca: Option<&[u8]>, redirects: u32) -> Result<Client, String> {
        let config = ureq::Agent::config_builder()
            .proxy(ureq::Proxy::try_from_env())
            .http_status_as_error(false)
            .max_redirects(redirects)
            .user_agent(concat!("backoff/", env!("CARGO_PKG_VERSION")))
            .build();
        let agent = ureq::Agent::with_parts(
            config,
            connector(extra_ca)?,
            ureq::unversioned::resolver::DefaultResolver::default(),
        );
        Ok(Client { agent })
    }

    /// Sends `req` once; its whole exchange ends by `deadline`.
    ///
    /// # Errors
    ///
    /// When no answer came: why, naming only the host.
    pub fn send(&self, req: &Request<'_>, deadline: Instant) -> Result<Response, Failure> {
        let host = req.target.host();
        let fail = |why: String| Failure {
            host: host.clone(),
            why,
            status: None,
            lasting: false,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(fail("no time left".into()));
        }
        let uri = req.target.uri.clone();
        let answer = match req.method {
            Method::Get => {
                let mut r = self
                    .agent
                    .get(uri)
                    .config()
                    .timeout_global(Some(left))
                    .build();
                for (k, v) in req.headers {
                    r = r.header(k, v);
                }
                r.call()
            }
            Method::Post => {
                let mut r = self
                    .agent
                    .post(uri)
                    .config()
                    .timeout_global(Some(left))
                    .build();
                for (k, v) in req.headers {
                    r = r.header(k, v);
                }
                r.send(req.body)
            }
        };
        let mut response = answer.map_err(|e| Failure {
            lasting: untrusted(&e),
            ..fail(describe(&e, left))
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, SystemTime::now()));
        let mut body = Vec::new();
        let _ = response
            .body_mut()
            .as_reader()
            .take(MAX_BODY)
            .read_to_end(&mut body);
        Ok(Response {
            status,
            retry_after,
            body,
        })
    }

    /// Sends `req` until a server answers with a status that is not
    /// `retryable` (a 2xx or a 4xx, for most), trying again after a
    /// connection that failed, a try that timed out, or a `retryable`
    /// status, while `deadline` leaves time: after a pause drawn with full
    /// jitter under a bound that doubles from 200 ms to 2 s, or the
    /// server's `Retry-After` if it fits.
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
    ) -> Result<Response, Failure> {
        let mut bound = FIRST_PAUSE;
        // The last failure that was an answer (a status).
        let mut answered: Option<Failure> = None;
        loop {
            let (failure, hint) = match self.send(req, deadline) {
                Ok(r) if !retryable(r.status) => return Ok(r),
                Ok(r) => (
                    Failure {
                        host: req.target.host(),
                        why: format!("answered {}", r.status),
                        status: Some(r.status),
                        lasting: false,
                    },
                    r.retry_after,
                ),
                Err(f) if f.lasting => return Err(f),
                Err(f) => (f, None),
            };
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
            std::thread::sleep(pause);
            bound = (bound * 2).min(MAX_PAUSE);
        }
    }
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

/// What a failed TLS handshake says.
const TLS_FAILED: &str =
    "TLS failed (is its certificate trusted? SSL_CERT_FILE names the authorities to trust)";

/// Why a request failed, in a few words that hold nothing of its URL.
fn describe(e: &ureq::Error, limit: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("timed out after {}", crate::duration::human(limit)),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::TooManyRedirects => format!("more than {MAX_REDIRECTS} redirects"),
        ureq::Error::RedirectFailed => "a redirect could not be followed".into(),
        #[cfg(feature = "tls")]
        ureq::Error::Rustls(_) => TLS_FAILED.into(),
        ureq::Error::Tls(_) => TLS_FAILED.into(),
        ureq::Error::ConnectProxyFailed(_) | ureq::Error::InvalidProxyUrl => {
            "the proxy (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) failed".into()
        }
        ureq::Error::Io(io) if untrusted(e) => io.to_string(),
        ureq::Error::Io(io) if io.to_string().contains("certificate") => format!(
            "{} (SSL_CERT_FILE names the authorities to trust)",
            crate::exec::describe(io)
        ),
        ureq::Error::Io(io) => crate::exec::describe(io),
        ureq::Error::BodyStalled => "the server stopped sending".into(),
        ureq::Error::LargeResponseHeader(..) => "the answer's headers are too large".into(),
        _ => "the exchange failed".into(),
    }
}

#[cfg(test)]
mod tests;
