//! Where and how the spans go, read from the environment as every
//! OpenTelemetry SDK reads it (`OTEL_*`), and what the resource says of
//! the process (and of the CI job it runs in). Pure: the environment is a
//! lookup function. Every value is bounded; none is ever repeated in a
//! line (a header may hold a token), only the variable's name.

use std::path::PathBuf;
use std::time::Duration;

use crate::http::Target;

/// The longest value of a resource attribute or a header taken from the
/// environment; a longer one is cut (attributes) or refused (headers).
const MAX_VALUE: usize = 4096;

/// The most headers or resource attributes taken from one variable.
const MAX_ENTRIES: usize = 64;

/// How the spans are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: binary protobuf (the default).
    Protobuf,
    /// `http/json`: OTLP/JSON.
    Json,
}

/// The export, as configured.
#[derive(Debug, Clone)]
pub struct Exporting {
    /// Where the spans are sent (`.../v1/traces`).
    pub endpoint: Target,
    /// How they are encoded.
    pub protocol: Protocol,
    /// Headers sent with them (values never shown).
    pub headers: Vec<(String, String)>,
    /// The most the export may take, retries included.
    pub timeout: Duration,
    /// Whether the body is gzipped.
    pub gzip: bool,
    /// A PEM file of certificate authorities to trust besides the system's.
    pub certificate: Option<PathBuf>,
    /// The resource's attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
}

/// The timeout when none is given (OpenTelemetry's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the export's configuration from `env`; `None` when it is off
/// (no endpoint, `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`) or
/// cannot be used. The lines to say once at the start go to `notices`:
/// a value that cannot be used, and why, naming the variable only.
pub fn from_env(
    env: &dyn Fn(&str) -> Option<String>,
    notices: &mut Vec<String>,
) -> Option<Exporting> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    let exporters: Vec<String> = get("OTEL_TRACES_EXPORTER")
        .unwrap_or_else(|| "otlp".into())
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .collect();
    if exporters.iter().any(|n| n == "none") {
        return None;
    }
    let endpoint = endpoint(&get, notices)?;
    if !exporters.iter().any(|n| n == "otlp") {
        notices.push(
            "OTEL_TRACES_EXPORTER names no exporter backoff has (it has otlp): no trace is exported"
                .into(),
        );
        return None;
    }
    let protocol = protocol(&get, notices)?;
    let headers = signal_specific(&get, "HEADERS")
        .map(|(name, v)| headers(&name, &v, notices))
        .unwrap_or_default();
    let timeout = signal_specific(&get, "TIMEOUT").map_or(DEFAULT_TIMEOUT, |(name, v)| {
        match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms.min(600_000)),
            _ => {
                notices.push(format!(
                    "{name} is not a number of milliseconds above 0: the export's timeout is 10s"
                ));
                DEFAULT_TIMEOUT
            }
        }
    });
    let gzip = match signal_specific(&get, "COMPRESSION") {
        None => false,
        Some((name, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "gzip" => true,
            "none" => false,
            _ => {
                notices.push(format!(
                    "{name} is neither gzip nor none: spans are sent as they are"
                ));
                false
            }
        },
    };
    if let Some(sampler) = get("OTEL_TRACES_SAMPLER")
        && !matches!(sampler.trim(), "always_on" | "parentbased_always_on")
    {
        notices.push(
            "OTEL_TRACES_SAMPLER is not read: every run is recorded, unless the TRACEPARENT it was given is not sampled"
                .into(),
        );
    }
    for client in ["CLIENT_CERTIFICATE", "CLIENT_KEY"] {
        if let Some((name, _)) = signal_specific(&get, client) {
            notices.push(format!(
                "{name}: backoff sends no client certificate; a collector that asks for one refuses the spans"
            ));
        }
    }
    Some(Exporting {
        endpoint,
        protocol,
        headers,
        timeout,
        gzip,
        certificate: signal_specific(&get, "CERTIFICATE").map(|(_, v)| PathBuf::from(v)),
        resource: resource(&get, notices),
    })
}

/// `OTEL_EXPORTER_OTLP_TRACES_<what>` if set, else `OTEL_EXPORTER_OTLP_<what>`:
/// the variable's name and value.
fn signal_specific(get: &dyn Fn(&str) -> Option<String>, what: &str) -> Option<(String, String)> {
    [
        format!("OTEL_EXPORTER_OTLP_TRACES_{what}"),
        format!("OTEL_EXPORTER_OTLP_{what}"),
    ]
    .into_iter()
    .find_map(|name| get(&name).map(|v| (name, v)))
}

/// The endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, or
/// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` added to its path.
fn endpoint(get: &dyn Fn(&str) -> Option<String>, notices: &mut Vec<String>) -> Option<Target> {
    let (name, value) = signal_specific(get, "ENDPOINT")?;
    let target = Target::parse(value.trim());
    if let Ok(t) = &target {
        notices.extend(t.cleartext_notice(&name));
    }
    match target {
        Ok(t) if name.contains("_TRACES_") => Some(t),
        Ok(t) => Some(t.join("v1/traces")),
        Err(why) => {
            notices.push(format!("{name}: {why}: no trace is exported"));
            None
        }
    }
}

/// `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`: `None` when it is one backoff
/// cannot speak.
fn protocol(get: &dyn Fn(&str) -> Option<String>, notices: &mut Vec<String>) -> Option<Protocol> {
    let Some((name, value)) = signal_specific(get, "PROTOCOL") else {
        return Some(Protocol::Protobuf);
    };
    match value.trim() {
        "http/protobuf" => Some(Protocol::Protobuf),
        "http/json" => Some(Protocol::Json),
        "grpc" => {
            notices.push(format!(
                "{name}=grpc: backoff sends traces over OTLP/HTTP only; set {name}=http/protobuf and the collector's OTLP/HTTP port (4318) in the endpoint: no trace is exported"
            ));
            None
        }
        _ => {
            notices.push(format!(
                "{name} is not http/protobuf or http/json: no trace is exported"
            ));
            None
        }
    }
}

/// `key=value` pairs separated by commas, values percent-decoded (the
/// W3C Baggage form the OpenTelemetry variables use); what cannot be read
/// is left out, said once naming `name`.
fn pairs(name: &str, value: &str, notices: &mut Vec<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut bad = false;
    for entry in value.split(',').filter(|e| !e.trim().is_empty()) {
        let parsed = entry.split_once('=').and_then(|(k, v)| {
            let k = k.trim();
            let v = percent_decode(v.trim())?;
            (!k.is_empty()).then(|| (k.to_owned(), v))
        });
        match parsed {
            Some(p) if out.len() < MAX_ENTRIES => out.push(p),
            _ => bad = true,
        }
    }
    if bad {
        notices.push(format!(
            "{name}: an entry that is not key=value (or one past {MAX_ENTRIES}) was left out"
        ));
    }
    out
}

/// Headers for the export: valid names and values only.
fn headers(name: &str, value: &str, notices: &mut Vec<String>) -> Vec<(String, String)> {
    // What frames the request is backoff's to say.
    const FRAMING: [&str; 6] = [
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "host",
        "connection",
    ];
    let all = pairs(name, value, notices);
    let valid = |(k, v): &(String, String)| {
        !FRAMING.contains(&k.to_ascii_lowercase().as_str())
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            && v.len() <= MAX_VALUE
            && !v.bytes().any(|b| b.is_ascii_control() && b != b'\t')
    };
    let before = all.len();
    let kept: Vec<_> = all.into_iter().filter(valid).collect();
    if kept.len() < before {
        notices.push(format!(
            "{name}: a header whose name or value cannot be sent was left out"
        ));
    }
    kept
}

/// `%XX` sequences decoded; `None` when one is not valid (a `%` not
/// followed by two hexadecimal digits), or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let valid = bytes.iter().enumerate().all(|(i, &b)| {
        b != b'%'
            || bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !valid {
        return None;
    }
    percent_encoding::percent_decode(bytes)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// `s`, cut to `MAX_VALUE` bytes at a character's boundary.
fn bounded(s: &str) -> String {
    s[..s.floor_char_boundary(MAX_VALUE)].to_owned()
}

/// The resource: `service.name` (`OTEL_SERVICE_NAME`, else the one in
/// `OTEL_RESOURCE_ATTRIBUTES`, else `backoff`), `OTEL_RESOURCE_ATTRIBUTES`,
/// and the CI job's (`ci_attributes`), the variable's winning over them.
fn resource(
    get: &dyn Fn(&str) -> Option<String>,
    notices: &mut Vec<String>,
) -> Vec<(String, String)> {
    let given = get("OTEL_RESOURCE_ATTRIBUTES")
        .map(|v| pairs("OTEL_RESOURCE_ATTRIBUTES", &v, notices))
        .unwrap_or_default();
    let service = get("OTEL_SERVICE_NAME")
        .or_else(|| {
            given
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| "backoff".into());
    let mut out = vec![("service.name".to_owned(), bounded(&service))];
    let mut add = |k: &str, v: &str| {
        if !out.iter().any(|(have, _)| have == k) {
            out.push((k.to_owned(), bounded(v)));
        }
    };
    for (k, v) in &given {
        add(k, v);
    }
    for (k, v) in ci_attributes(get) {
        add(k, &v);
    }
    out
}

/// What the CI job says of itself, as OpenTelemetry's `cicd.*` and `vcs.*`
/// conventions name it: GitHub Actions and GitLab CI.
pub fn ci_attributes(get: &dyn Fn(&str) -> Option<String>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut put = |key: &'static str, value: Option<String>| {
        if let Some(v) = value {
            out.push((key, v));
        }
    };
    if get("GITHUB_ACTIONS").as_deref() == Some("true") {
        let server = get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        let repo = get("GITHUB_REPOSITORY");
        let run = get("GITHUB_RUN_ID");
        put("cicd.pipeline.name", get("GITHUB_WORKFLOW"));
        put("cicd.pipeline.run.id", run.clone());
        put(
            "cicd.pipeline.run.url.full",
            repo.as_ref()
                .zip(run.as_ref())
                .map(|(r, id)| format!("{server}/{r}/actions/runs/{id}")),
        );
        put("cicd.pipeline.task.name", get("GITHUB_JOB"));
        put("cicd.worker.name", get("RUNNER_NAME"));
        put(
            "vcs.repository.url.full",
            repo.map(|r| format!("{server}/{r}")),
        );
        put("vcs.ref.head.name", get("GITHUB_REF_NAME"));
        put("vcs.ref.head.revision", get("GITHUB_SHA"));
    } else if get("GITLAB_CI").as_deref() == Some("true") {
        put(
            "cicd.pipeline.name",
            get("CI_PIPELINE_NAME").or_else(|| get("CI_PROJECT_PATH")),
        );
        put("cicd.pipeline.run.id", get("CI_PIPELINE_ID"));
        put("cicd.pipeline.run.url.full", get("CI_PIPELINE_URL"));
        put("cicd.pipeline.task.name", get("CI_JOB_NAME"));
        put("cicd.pipeline.task.run.id", get("CI_JOB_ID"));
        put("cicd.pipeline.task.run.url.full", get("CI_JOB_URL"));
        put("cicd.worker.name", get("CI_RUNNER_DESCRIPTION"));
        put("vcs.repository.url.full", get("CI_PROJECT_URL"));
        put("vcs.ref.head.name", get("CI_COMMIT_REF_NAME"));
        put("vcs.ref.head.revision", get("CI_COMMIT_SHA"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> (Option<Exporting>, Vec<String>) {
        let map: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut notices = Vec::new();
        let got = from_env(&|k| map.get(k).cloned(), &mut notices);
        (got, notices)
    }

    #[test]
    fn no_endpoint_disabled_or_none_means_no_export_and_no_line() {
        for vars in [
            &[][..],
            &[
                ("OTEL_SDK_DISABLED", "true"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ],
            &[
                ("OTEL_TRACES_EXPORTER", "none"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ],
        ] {
            let (got, notices) = read(vars);
            assert!(got.is_none());
            assert!(notices.is_empty(), "{notices:?}");
        }
    }

    #[test]
    fn the_generic_endpoint_gets_v1_traces_and_the_specific_one_is_used_as_is() {
        let (got, _) = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]);
        assert_eq!(got.unwrap().endpoint.url(), "http://c:4318/v1/traces");
        let (got, _) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t:1/x/traces"),
        ]);
        let got = got.unwrap();
        assert_eq!(got.endpoint.url(), "https://t:1/x/traces");
        assert_eq!(got.protocol, Protocol::Protobuf);
        assert_eq!(got.timeout, DEFAULT_TIMEOUT);
        assert!(!got.gzip);
        assert_eq!(
            got.resource,
            vec![("service.name".into(), "backoff".into())]
        );
    }

    #[test]
    fn none_wins_over_an_endpoint_that_cannot_be_read_and_framing_headers_are_refused() {
        let (got, notices) = read(&[
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
        ]);
        assert!(got.is_none());
        assert!(notices.is_empty(), "{notices:?}");
        let (got, notices) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Content-Length=3,host=evil,api-key=k",
            ),
        ]);
        assert_eq!(got.unwrap().headers, vec![("api-key".into(), "k".into())]);
        assert_eq!(notices.len(), 1);
    }

    #[test]
    fn grpc_is_refused_with_the_fix() {
        let (got, notices) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(got.is_none());
        assert!(notices[0].contains("http/protobuf") && notices[0].contains("4318"));
    }

    #[test]
    fn headers_timeout_compression_and_resource_are_read_and_bounded() {
        let (got, notices) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-other=1"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "Authorization=Bearer%20s3cret,bad,x-t=2",
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_SERVICE_NAME", "nightly"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=ignored,deployment.environment.name=ci",
            ),
        ]);
        let got = got.unwrap();
        assert_eq!(
            got.headers,
            vec![
                ("Authorization".into(), "Bearer s3cret".into()),
                ("x-t".into(), "2".into())
            ]
        );
        assert_eq!(got.timeout, Duration::from_millis(2500));
        assert!(got.gzip);
        assert_eq!(got.resource[0], ("service.name".into(), "nightly".into()));
        assert!(
            got.resource
                .contains(&("deployment.environment.name".into(), "ci".into()))
        );
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(!notices[0].contains("s3cret"));
    }

    #[test]
    fn bad_values_are_said_by_name_and_defaults_used() {
        let (got, notices) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"),
        ]);
        assert_eq!(got.unwrap().timeout, DEFAULT_TIMEOUT);
        assert_eq!(notices.len(), 4, "{notices:?}");
        let (got, notices) = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c/tok3n")]);
        assert!(got.is_none());
        assert!(notices[0].starts_with("OTEL_EXPORTER_OTLP_ENDPOINT: "));
        assert!(!notices[0].contains("tok3n"));
    }

    #[test]
    fn percent_escapes_are_decoded_and_a_bad_one_refuses_the_value() {
        assert_eq!(
            percent_decode("Bearer%20a%2Cb").as_deref(),
            Some("Bearer a,b")
        );
        assert_eq!(percent_decode("caf%C3%A9").as_deref(), Some("café"));
        for bad in ["50%", "%2", "%zz", "%G0", "%FF"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn credentials_over_http_are_said_once_by_the_variables_name() {
        let (got, notices) = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://u:s3cret@c:4318")]);
        assert!(got.is_some());
        assert_eq!(
            notices,
            vec![
                "OTEL_EXPORTER_OTLP_ENDPOINT sends a user name and password in clear over http:// to c:4318: use https://"
            ]
        );
        let (_, notices) = read(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "https://u:p@c/v1/traces",
        )]);
        assert!(notices.is_empty(), "{notices:?}");
    }

    #[test]
    fn a_github_job_is_named_by_the_cicd_conventions() {
        let env = |k: &str| {
            let v = match k {
                "GITHUB_ACTIONS" => "true",
                "GITHUB_REPOSITORY" => "o/r",
                "GITHUB_RUN_ID" => "42",
                "GITHUB_WORKFLOW" => "CI",
                "GITHUB_JOB" => "test",
                _ => return None,
            };
            Some(v.to_owned())
        };
        let got = ci_attributes(&env);
        assert!(got.contains(&(
            "cicd.pipeline.run.url.full",
            "https://github.com/o/r/actions/runs/42".into()
        )));
        assert!(got.contains(&("cicd.pipeline.task.name", "test".into())));
    }
}
