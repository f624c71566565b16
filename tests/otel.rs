//! The `otel` feature: a span per call, exported over OTLP/HTTP to a collector on loopback
//! that decodes what it receives with the OpenTelemetry project's own protobuf messages.
#![cfg(feature = "otel")]

use crate::common;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::runtime_api::{Bootstrap, RuntimeApi};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as Any};
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use prost::Message as _;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A span as received, with its resource's attributes.
struct Received {
    span: Span,
    resource: Vec<KeyValue>,
}

type Spans = Arc<Mutex<Vec<Received>>>;

/// An OTLP/HTTP collector on 127.0.0.1: decodes each export request (protobuf) and keeps its
/// spans. Answers 400 to a body that is not one, so a wrong encoding fails the test.
async fn collector() -> (String, Spans) {
    async fn traces(State(spans): State<Spans>, body: Bytes) -> axum::http::StatusCode {
        let Ok(request) = ExportTraceServiceRequest::decode(body) else {
            return axum::http::StatusCode::BAD_REQUEST;
        };
        let mut spans = spans.lock().unwrap();
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.unwrap_or_default().attributes;
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        span,
                        resource: resource.clone(),
                    });
                }
            }
        }
        axum::http::StatusCode::OK
    }
    let spans = Spans::default();
    let router = axum::Router::new()
        .route("/v1/traces", post(traces))
        .with_state(spans.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, spans)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    match attribute(attributes, key) {
        Some(Any::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn event(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("events/{name}.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn in_lambda_each_calls_span_reaches_the_collector_before_the_invocation_answers() {
    let (endpoint, spans) = collector().await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut traced = event("apigw-http-call-success-stage");
    traced["headers"]["traceparent"] = json!(traceparent);
    let (api, addr) = RuntimeApi::start(
        vec![
            ("req-traced".into(), traced, None),
            ("req-xray".into(), event("apigw-http-call-tool-error"), None),
        ],
        Duration::ZERO,
    )
    .await;
    // The SDK's own schedule is an hour: only the flush before each answer can send a span.
    let mut bootstrap = Bootstrap::start(
        addr,
        &[
            ("OXP_OTEL_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
        ],
    );
    api.wait_for(1, &mut bootstrap).await;
    assert!(
        !spans.lock().unwrap().is_empty(),
        "the first call's span came before its answer"
    );
    api.wait_for(2, &mut bootstrap).await;
    let spans = spans.lock().unwrap();
    assert_eq!(spans.len(), 2, "one span per call");

    let traced = &spans[0];
    let span = &traced.span;
    assert_eq!(span.name, "execute_tool Calculator.Add@1.0.0");
    assert_eq!(span.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(
        hex(&span.trace_id),
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "in the caller's trace"
    );
    assert_eq!(hex(&span.parent_span_id), "00f067aa0ba902b7");
    assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
    let attrs = &span.attributes;
    assert_eq!(
        string(attrs, "gen_ai.tool.name").as_deref(),
        Some("Calculator.Add@1.0.0")
    );
    assert_eq!(
        string(attrs, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(string(attrs, "oxp.protocol").as_deref(), Some("oxp"));
    assert_eq!(string(attrs, "oxp.outcome").as_deref(), Some("success"));
    assert_eq!(
        string(attrs, "faas.invocation_id").as_deref(),
        Some("req-traced")
    );
    assert!(matches!(
        attribute(attrs, "faas.coldstart"),
        Some(Any::BoolValue(true))
    ));
    let resource = &traced.resource;
    assert_eq!(string(resource, "service.name").as_deref(), Some("tools"));
    assert_eq!(string(resource, "faas.name").as_deref(), Some("tools"));
    assert_eq!(string(resource, "cloud.provider").as_deref(), Some("aws"));

    // No traceparent: the span joins Lambda's sampled X-Ray trace (common::runtime_api::TRACE_ID).
    let span = &spans[1].span;
    assert_eq!(hex(&span.trace_id), "67a0b1c20123456789abcdef01234567");
    assert_eq!(hex(&span.parent_span_id), "53995c3f42cd8ad8");
    assert_eq!(
        string(&span.attributes, "error.type").as_deref(),
        Some("tool_error")
    );
    assert_eq!(
        span.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    assert!(matches!(
        attribute(&span.attributes, "faas.coldstart"),
        Some(Any::BoolValue(false))
    ));
}

#[tokio::test]
async fn locally_spans_are_sent_on_the_sdk_schedule_even_with_logs_turned_down() {
    let (endpoint, spans) = collector().await;
    let (_server, base) = common::start_binary(
        env!("CARGO_BIN_EXE_oxp-lambda"),
        &[
            ("OXP_AUTH", "none"),
            ("OXP_LOG", "warn"),
            ("OXP_OTEL_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "my-tools"),
        ],
    );
    let addr = base.trim_start_matches("http://");
    let headers = format!(
        "Host: {addr}\r\nContent-Type: application/json\r\n\
         traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
    );
    let unknown = r#"{"request":{"tool_id":"No.Such.Tool","input":{}}}"#;
    let (status, body) =
        common::http_raw_with(addr, "POST", "/tools/call", &headers, unknown).await;
    assert_eq!(status, 400, "{body}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while spans.lock().unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no span in 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let spans = spans.lock().unwrap();
    let received = &spans[0];
    assert_eq!(
        received.span.name, "execute_tool",
        "a tool name the caller made up does not name the span"
    );
    assert_eq!(
        hex(&received.span.trace_id),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(
        string(&received.span.attributes, "error.type").as_deref(),
        Some("not_found")
    );
    assert_eq!(
        string(&received.resource, "service.name").as_deref(),
        Some("my-tools")
    );
    assert_eq!(
        attribute(&received.span.attributes, "faas.invocation_id"),
        None,
        "no Lambda invocation locally"
    );
}
