//! A run's spans as one OTLP export request, in the OpenTelemetry
//! project's own message types (`opentelemetry-proto`): encoded as
//! protobuf by prost, or as OTLP/JSON by serde (ids in hex, as OTLP/JSON
//! has them).

use std::time::SystemTime;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as otlp;
use prost::Message as _;

use crate::trace::config::Protocol;
use crate::trace::spans::{Attr, Attrs, Span, Trace};

/// Nanoseconds since the Unix epoch (0 before it).
fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn key_values(attributes: &Attrs) -> Vec<KeyValue> {
    attributes
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: Some(AnyValue {
                value: Some(match v {
                    Attr::Str(s) => any_value::Value::StringValue(s.clone()),
                    Attr::Int(i) => any_value::Value::IntValue(*i),
                    Attr::Double(d) => any_value::Value::DoubleValue(*d),
                    Attr::Bool(b) => any_value::Value::BoolValue(*b),
                }),
            }),
            ..KeyValue::default()
        })
        .collect()
}

/// One span, as OTLP has it.
fn span(trace: &Trace, s: &Span, root: bool) -> otlp::Span {
    // Flags: the trace flags, and whether the parent is remote (bits 8
    // and 9), as the run's span's is when it joined a given context.
    let has_remote = 1 << 8;
    let is_remote = 1 << 9;
    let flags = u32::from(trace.flags)
        | has_remote
        | if root && s.parent.is_some() {
            is_remote
        } else {
            0
        };
    otlp::Span {
        trace_id: trace.trace.0.to_vec(),
        span_id: s.id.0.to_vec(),
        trace_state: trace.trace_state.clone(),
        parent_span_id: s.parent.map(|p| p.0.to_vec()).unwrap_or_default(),
        flags,
        name: s.name.clone(),
        kind: otlp::span::SpanKind::Internal as i32,
        start_time_unix_nano: nanos(s.start),
        end_time_unix_nano: nanos(s.end),
        attributes: key_values(&s.attributes),
        dropped_attributes_count: 0,
        events: s
            .events
            .iter()
            .map(|e| otlp::span::Event {
                time_unix_nano: nanos(e.at),
                name: e.name.clone(),
                attributes: key_values(&e.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        dropped_events_count: s.dropped_events,
        links: Vec::new(),
        dropped_links_count: 0,
        status: Some(match &s.error {
            Some(message) => otlp::Status {
                message: message.clone(),
                code: otlp::status::StatusCode::Error as i32,
            },
            None => otlp::Status {
                message: String::new(),
                code: otlp::status::StatusCode::Unset as i32,
            },
        }),
    }
}

/// The export request of `trace`, under `resource`.
pub fn request(trace: &Trace, resource: &Attrs) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![otlp::ResourceSpans {
            resource: Some(Resource {
                attributes: key_values(resource),
                dropped_attributes_count: 0,
                entity_refs: Vec::new(),
            }),
            scope_spans: vec![otlp::ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "backoff".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    attributes: Vec::new(),
                    dropped_attributes_count: 0,
                }),
                spans: trace
                    .spans
                    .iter()
                    .enumerate()
                    .map(|(i, s)| span(trace, s, i == 0))
                    .collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The request's body in `protocol`, and its content type.
pub fn encode(req: &ExportTraceServiceRequest, protocol: Protocol) -> (Vec<u8>, &'static str) {
    match protocol {
        Protocol::Protobuf => (req.encode_to_vec(), "application/x-protobuf"),
        Protocol::Json => (
            serde_json::to_vec(req).unwrap_or_default(),
            "application/json",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::context::{SpanId, TraceId};

    #[test]
    fn protobuf_and_json_say_the_same_spans() {
        let t0 = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let run = Span {
            id: SpanId([1; 8]),
            parent: Some(SpanId([9; 8])),
            name: "job".into(),
            start: t0,
            end: t0,
            attributes: vec![("backoff.attempts".into(), Attr::Int(2))],
            events: Vec::new(),
            error: Some("gave up: exhausted".into()),
            dropped_events: 0,
        };
        let trace = Trace {
            trace: TraceId([0xab; 16]),
            flags: 1,
            trace_state: String::new(),
            spans: vec![run],
        };
        let req = request(
            &trace,
            &vec![("service.name".into(), Attr::Str("b".into()))],
        );
        let (bytes, kind) = encode(&req, Protocol::Protobuf);
        assert_eq!(kind, "application/x-protobuf");
        let back = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, req);
        let (json, _) = encode(&req, Protocol::Json);
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let s = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "abababababababababababababababab");
        assert_eq!(s["parentSpanId"], "0909090909090909");
        assert_eq!(s["flags"], 0x301);
    }
}
