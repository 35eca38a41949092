//! Metrics pushed for batch jobs (`--metrics-push URL`): when the run ends,
//! its gauges (`metrics::pushed`) go to a Prometheus Pushgateway, in the
//! group `URL/metrics/job/NAME/instance/HOST`, through the one HTTP client.
//!
//! A run that succeeded replaces the group (PUT), so that a series an
//! earlier run left and this one has not (a breaker's, a lock's) goes; any
//! other end adds to it (POST), which replaces the metrics it pushes and
//! keeps the others, `backoff_last_success_timestamp_seconds` among them:
//! the Pushgateway itself keeps the time of the last success, which a
//! container that starts afresh for each run could not. The push is tried
//! again as a check-in is (a refused connection a few times, a 5xx or a
//! timeout while `--metrics-push-timeout` lasts), never changes the exit
//! status, and what went wrong is one warning naming only the host.

use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::http::{Cancel, Client, Method, Request, Target};
use crate::report::Warnings;

/// How near the deadline a failure is one of time.
const SLACK: Duration = Duration::from_millis(50);

/// Where and how long to push (`--metrics-push`, `--metrics-push-timeout`).
#[derive(Debug, Clone)]
pub struct Push {
    /// The Pushgateway's URL.
    pub gateway: Target,
    /// The longest the push may take, retries included.
    pub timeout: Duration,
}

/// A label of a group's path, `label/value`: as it is when `value` is made
/// of the characters a path segment keeps as they are, else the
/// Pushgateway's `label@base64/VALUE` (URL-safe base64, which it reads for
/// a value with a `/`, an empty one, or any other).
fn label_segment(label: &str, value: &str) -> String {
    let plain = !matches!(value, "" | "." | "..")
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    if plain {
        format!("{label}/{value}")
    } else if value.is_empty() {
        // What the Pushgateway reads as an empty value.
        format!("{label}@base64/=")
    } else {
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value);
        format!("{label}@base64/{encoded}")
    }
}

impl Push {
    /// The URL of the group of the job `job` on the host `instance`.
    pub fn group(&self, job: &str, instance: &str) -> Target {
        self.gateway.join(&format!(
            "metrics/{}/{}",
            label_segment("job", job),
            label_segment("instance", instance)
        ))
    }

    /// Pushes `body` (exposition text) to the group of `job` on this host,
    /// replacing the group after a success (`success`), adding to it
    /// otherwise; within `--metrics-push-timeout` and by `by` (when
    /// backoff must have exited), until `cancel` gives it up. What went
    /// wrong, if anything, is one warning.
    pub fn send(
        &self,
        job: &str,
        body: &[u8],
        success: bool,
        by: Option<Instant>,
        cancel: &Cancel,
        warnings: &Warnings,
    ) {
        let client = match Client::new(None) {
            Ok(c) => c,
            Err(why) => {
                warnings.warn(&format!("the metrics were not pushed: {why}"));
                return;
            }
        };
        let timeout = Instant::now() + self.timeout;
        let deadline = by.map_or(timeout, |by| by.min(timeout));
        let target = self.group(job, &crate::sys::machine::host_name());
        let headers = [(
            "Content-Type".to_owned(),
            "text/plain; version=0.0.4; charset=utf-8".to_owned(),
        )];
        let req = Request {
            method: if success { Method::Put } else { Method::Post },
            target: &target,
            headers: &headers,
            body,
        };
        let host = self.gateway.host();
        let why = match client.send_with_retries(&req, deadline, crate::ping::retryable, cancel) {
            Ok(r) if crate::ping::accepted(r.status) => return,
            Err(_) if cancel.cancelled() => return,
            Ok(r) => format!("{host}: answered {}", r.status),
            Err(f) if f.status.is_none() && Instant::now() + SLACK >= deadline => {
                if deadline < timeout {
                    format!(
                        "{host}: no answer before backoff's time (--max-time plus --kill-after) ran out"
                    )
                } else {
                    format!(
                        "{host}: no answer within {} (--metrics-push-timeout)",
                        crate::duration::human(self.timeout)
                    )
                }
            }
            Err(f) => f.to_string(),
        };
        warnings.warn(&format!("the metrics were not pushed: {why}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_names_its_job_and_instance_plainly_or_in_base64() {
        let push = Push {
            gateway: Target::parse("https://user:pw@pushgateway.example:9091/prefix/").unwrap(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            push.group("nightly-backup", "web-1.example").url(),
            "https://user:pw@pushgateway.example:9091/prefix/metrics/job/nightly-backup/instance/web-1.example"
        );
        assert_eq!(
            push.group("a/b c", "").url(),
            "https://user:pw@pushgateway.example:9091/prefix/metrics/job@base64/YS9iIGM/instance@base64/="
        );
        for (dots, encoded) in [(".", "Lg"), ("..", "Li4")] {
            assert!(
                push.group(dots, "h")
                    .url()
                    .ends_with(&format!("/job@base64/{encoded}/instance/h")),
                "{dots}"
            );
        }
        // Every byte of a value goes through, in URL-safe base64.
        let odd = "é?#%/\u{1}";
        let url = push.group(odd, "h").url();
        let encoded = url
            .split("job@base64/")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap();
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .unwrap();
        assert_eq!(decoded, odd.as_bytes());
    }
}
